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
  /** Ours with upstream's of the same name; one missing upstream is a difference. */
  const paired = <T>(kind: string, mine: Record<string, T>, theirs: Record<string, T>) =>
    Object.entries(mine).flatMap(([name, entry]): Array<[string, T, T]> => {
      if (theirs[name]) return [[name, entry, theirs[name]]];
      if (mayBeAbsent.has(name)) return [];
      differences.push(`${name}: declared by ours, not ${kind} upstream`);
      return [];
    });

  for (const [message, fields, theirs] of paired("a message", ours.messages, upstream.messages))
    for (const [number, name, type] of fields) {
      const same = theirs.find(([, n]) => n === name);
      const atNumber = theirs.find(([id]) => id === number);
      if (!same && mayBeAbsent.has(`${message}.${name}`) && !atNumber) continue;
      if (!same)
        differences.push(
          `${message}.${name}: upstream has no such field (ours: number ${number}; upstream's ${number}: ${atNumber?.[1] ?? "none"})`,
        );
      else if (same[0] !== number)
        differences.push(`${message}.${name}: field number ours ${number}, upstream ${same[0]}`);
      if (same && same[2] !== type) differences.push(`${message}.${name}: type ours "${type}", upstream "${same[2]}"`);
    }
  for (const [enumName, values, theirs] of paired("an enum", ours.enums, upstream.enums))
    for (const [name, number] of values) {
      const same = theirs.find(([n]) => n === name);
      if (!same) differences.push(`${enumName}.${name}: upstream has no such value (ours: ${number})`);
      else if (same[1] !== number) differences.push(`${enumName}.${name}: value ours ${number}, upstream ${same[1]}`);
    }
  for (const [service, methods, theirs] of paired("a service", ours.services, upstream.services))
    for (const [method, request, response] of methods) {
      const same = theirs.find(([m]) => m === method);
      if (!same) differences.push(`${service}/${method}: upstream has no such method`);
      else if (same[1] !== request || same[2] !== response)
        differences.push(`${service}/${method}: ours (${request}) → ${response}, upstream (${same[1]}) → ${same[2]}`);
    }
  return differences;
}
