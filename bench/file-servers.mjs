// Child process of files-run.mjs: our API (as `pnpm start` runs it) with a filesystem blob store under STORAGE_DIR.
// Answers 'rss' with its peak resident memory so far.
import { startApiWithUser } from './bootstrap.mjs';

const { DATABASE_URL, STORAGE_DIR } = process.env;
const { running, token, ws } = await startApiWithUser({ DATABASE_URL, STORAGE_DIR });
process.send({ apiUrl: running.url, token, workspaceId: ws.id });
process.on('message', async (m) => {
  if (m === 'rss') process.send({ maxRssBytes: process.resourceUsage().maxRSS * 1024, rss: process.memoryUsage().rss });
  if (m === 'stop') {
    await running.close();
    process.exit(0);
  }
});
