/** A response read whole, for the limit tests' assertions on status, headers and envelope. */
export interface Answer {
  status: number;
  headers: Headers;
  body: { type?: string; error?: { type: string; message: string } } | null;
}

export async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}
