#!/usr/bin/env bun
// Entry point: runs the CLI and exits with its code.
import { main } from "../lib/cli/cli.ts";

process.exitCode = await main(process.argv.slice(2));
