// The AI SDK's own contract for UI messages, as an oracle for tests/integrations/test_ai_sdk.py.
// Reads one JSON array of histories (each a UIMessage array) per line on stdin; writes one line
// per request: a JSON array with, per history, whether safeValidateUIMessages accepted it and
// what convertToModelMessages made of it. Stays up until stdin closes (one process per session).
import { createInterface } from 'node:readline';
import { convertToModelMessages, safeValidateUIMessages } from 'ai';

async function check(messages) {
  const validated = await safeValidateUIMessages({ messages });
  if (!validated.success) {
    return { valid: false, error: String(validated.error?.message ?? validated.error) };
  }
  try {
    const model = await convertToModelMessages(validated.data);
    return { valid: true, model: JSON.parse(JSON.stringify(model)) };
  } catch (error) {
    return { valid: true, convertError: String(error?.message ?? error) };
  }
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const results = [];
  for (const messages of JSON.parse(line)) results.push(await check(messages));
  process.stdout.write(JSON.stringify(results) + '\n');
}
