import { app, type InvocationContext, type Timer } from '@azure/functions';
import { sweep } from '../shared/webhooks/deliveries.js';

/**
 * Every half minute by default (`WEBHOOKS_SWEEP_SCHEDULE`): queues the events whose announcement
 * never reached the queue and the deliveries whose next attempt is overdue, so that a queue outage
 * delays events but loses none.
 */
export async function webhooksSweep(_timer: Timer, context: InvocationContext): Promise<void> {
  const found = await sweep();
  if (found.events || found.deliveries) context.log(`Queued ${found.events} unannounced events and ${found.deliveries} overdue deliveries`);
}

app.timer('webhooks-sweep', { schedule: '%WEBHOOKS_SWEEP_SCHEDULE%', handler: webhooksSweep });
