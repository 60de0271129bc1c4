// Responses that may stay quiet for long while they stream (a followed log): the server adapters
// lift their idle bound for such a response until its body ends, and keep it for everything else.
const marked = new WeakSet<Response>();

/** Marks a streamed response that may send nothing for a long time; returns it. */
export function longLived(response: Response): Response {
  marked.add(response);
  return response;
}

/** Whether the handler marked this response with longLived(). */
export function isLongLived(response: Response): boolean {
  return marked.has(response);
}
