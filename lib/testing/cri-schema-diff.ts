// Lists where our runtime.v1 tables (from cri-proto.ts) differ from upstream's (cri-api's api.proto as a runtime
// was built with it): only what ours declares is checked, since ours is a subset by design.
import type { CriSchema } from "../container/cri/cri-codec.ts";

/**
 * One line per difference, each naming the message.field (enum.VALUE, Service/Method) and both values.
 * `newer` names fields (`Message.field`) added to cri-api after the runtime's version: absent upstream is then
 * no difference, but present they are checked as any other.
 */
export function criSchemaDifferences(ours: CriSchema, upstream: CriSchema, newer: Iterable<string> = []): string[] {
  const mayBeAbsent = new Set(newer);
  const differences: string[] = [];
  for (const [message, fields] of Object.entries(ours.messages)) {
    const theirs = upstream.messages[message];
    if (!theirs) {
      differences.push(`${message}: declared by ours, not a message upstream`);
      continue;
    }
    for (const [number, name, type] of fields) {
      const same = theirs.find(([, n]) => n === name);
      if (!same && mayBeAbsent.has(`${message}.${name}`) && !theirs.some(([id]) => id === number)) continue;
      if (!same) {
        const atNumber = theirs.find(([id]) => id === number);
        differences.push(
          `${message}.${name}: upstream has no such field (ours: number ${number}; upstream's ${number}: ${atNumber ? atNumber[1] : "none"})`,
        );
        continue;
      }
      if (same[0] !== number) differences.push(`${message}.${name}: field number ours ${number}, upstream ${same[0]}`);
      if (same[2] !== type) differences.push(`${message}.${name}: type ours "${type}", upstream "${same[2]}"`);
    }
  }
  for (const [enumName, values] of Object.entries(ours.enums)) {
    const theirs = upstream.enums[enumName];
    if (!theirs) {
      differences.push(`${enumName}: declared by ours, not an enum upstream`);
      continue;
    }
    for (const [name, number] of values) {
      const same = theirs.find(([n]) => n === name);
      if (!same) differences.push(`${enumName}.${name}: upstream has no such value (ours: ${number})`);
      else if (same[1] !== number) differences.push(`${enumName}.${name}: value ours ${number}, upstream ${same[1]}`);
    }
  }
  for (const [service, methods] of Object.entries(ours.services)) {
    const theirs = upstream.services[service];
    if (!theirs) {
      differences.push(`${service}: declared by ours, not a service upstream`);
      continue;
    }
    for (const [method, request, response] of methods) {
      const same = theirs.find(([m]) => m === method);
      if (!same) differences.push(`${service}/${method}: upstream has no such method`);
      else if (same[1] !== request || same[2] !== response)
        differences.push(`${service}/${method}: ours (${request}) → ${response}, upstream (${same[1]}) → ${same[2]}`);
    }
  }
  return differences;
}
