import { parentPort, threadId, type MessagePort } from 'node:worker_threads';

/**
 * A worker for ThreadPool's unit tests (thread-pool.spec.ts): answers each `{port, text}` session
 * on its port with the text upper-cased and the thread's id, `{port, crash: true}` by exiting.
 */
parentPort?.on('message', (m: { port: MessagePort; text?: string; crash?: boolean }) => {
  if (m.crash) process.exit(3);
  m.port.postMessage({ text: (m.text ?? '').toUpperCase(), thread: threadId });
  m.port.close();
});
