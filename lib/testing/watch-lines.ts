// A watch response's lines as they arrive, for tests of the API's watches: parsed JSON lines, and a settle that
// lets the stream's promises run.
export async function watchLines(response: Response) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const lines: any[] = [];
  let buffer = "";
  let ended = false;
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return void (ended = true);
      buffer += decoder.decode(value);
      for (let at = buffer.indexOf("\n"); at >= 0; at = buffer.indexOf("\n")) {
        if (at > 0) lines.push(JSON.parse(buffer.slice(0, at)));
        buffer = buffer.slice(at + 1);
      }
    }
  })();
  const settle = async () => {
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  };
  await settle();
  return { lines, settle, ended: () => ended, stop: () => reader.cancel() };
}
