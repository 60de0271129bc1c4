// Go's text/tabwriter as kubectl uses it (left-aligned, space padding): tab-terminated cells aligned in column
// blocks of consecutive lines, the text after a line's last tab left unpadded, so `kubelet get` and `kubelet
// describe` lay out their output as kubectl does (get: minwidth 6, padding 3; describe: minwidth 0, padding 2).

const width = (text: string) => [...text].length;

/** `text` laid out as a Go tabwriter with `minwidth` and `padding` (flags 0) would flush it. */
export function tabwrite(text: string, minwidth: number, padding: number): string {
  const lines = text.split("\n").map((line) => line.split("\t"));
  const out: string[] = [];
  const widths: number[] = [];
  const writeLines = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const cells = lines[i]!;
      out.push(
        cells.map((cell, j) => (j < widths.length ? cell + " ".repeat(widths[j]! - width(cell)) : cell)).join(""),
      );
    }
  };
  // upstream's Writer.format: a column block is the run of lines that have a tab-terminated cell in this column.
  const format = (line0: number, line1: number) => {
    const column = widths.length;
    let start = line0;
    for (let row = line0; row < line1; row++) {
      if (column >= lines[row]!.length - 1) continue;
      writeLines(start, row);
      let cellWidth = minwidth;
      let end = row;
      for (; end < line1 && column < lines[end]!.length - 1; end++)
        cellWidth = Math.max(cellWidth, width(lines[end]![column]!) + padding);
      widths.push(cellWidth);
      format(row, end);
      widths.pop();
      start = end;
      row = end - 1;
    }
    writeLines(start, line1);
  };
  format(0, lines.length);
  return out.join("\n");
}
