// Kubernetes `$(VAR)` expansion (expansion.go): `$(NAME)` → its value when defined, left as written
// when not; `$$` → a literal `$`, so `$$(NAME)` stays `$(NAME)`.

/** Expands `$(NAME)` references in `input` with `lookup`. */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const char = input[i];
    if (char !== "$" || i + 1 >= input.length) {
      out += char;
      continue;
    }
    const next = input[i + 1];
    if (next === "$") {
      out += "$";
      i++;
    } else if (next === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = name ? lookup(name) : undefined;
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += char;
    }
  }
  return out;
}
