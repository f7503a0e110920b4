// The AI SDK's own contract for UI messages, as an oracle for tests/integrations/test_ai_sdk.py.
// Reads a JSON array of histories (each a UIMessage array) on stdin; writes one JSON result per
// history: whether safeValidateUIMessages accepted it, and what convertToModelMessages made of it.
import { convertToModelMessages, safeValidateUIMessages } from 'ai';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const histories = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const results = [];
for (const messages of histories) {
  const validated = await safeValidateUIMessages({ messages });
  if (!validated.success) {
    results.push({ valid: false, error: String(validated.error?.message ?? validated.error) });
    continue;
  }
  try {
    const model = await convertToModelMessages(validated.data);
    results.push({ valid: true, model: JSON.parse(JSON.stringify(model)) });
  } catch (error) {
    results.push({ valid: true, convertError: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
