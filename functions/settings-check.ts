import { app } from '@azure/functions';
import { settingsProblems } from '../shared/settings/read.js';

/**
 * When the worker starts, settings that are missing or wrong (WEBHOOKS_ALLOW_LOOPBACK in Azure, a bad
 * WEBHOOKS_RETRY_SCHEDULE, no CURSOR_SIGNING_KEY, …) are an error in the log at once, not at the first
 * request. The app stays closed either way: every request that needs them answers 500 "not configured".
 */
export function checkSettings(): void {
  const problems = settingsProblems();
  if (problems.length) console.error(`Configuration error: the app is not configured: ${problems.join('; ')}`);
}

app.hook.appStart(checkSettings);
