import { app, type InvocationContext, type Timer } from '@azure/functions';
import { sweep } from '../shared/background/webhooks-sweep.js';

/**
 * Every half minute by default (`WEBHOOKS_SWEEP_SCHEDULE`): brings back through the change feed the
 * deliveries whose next attempt is overdue (its queue message lost, or its attempt cut off by a
 * crash), so that a queue outage delays deliveries but loses none.
 */
export async function webhooksSweep(_timer: Timer, context: InvocationContext): Promise<void> {
  const broughtBack = await sweep();
  if (broughtBack) context.log(`Brought back ${broughtBack} overdue deliveries`);
}

app.timer('webhooks-sweep', { schedule: '%WEBHOOKS_SWEEP_SCHEDULE%', handler: webhooksSweep });
