import { describe, expect, it } from 'vitest';
import { relayChanges } from '../../shared/relay.js';

describe('the change feed relay', () => {
  it('leaves alone, and names, a document of a relayed kind that is not as the app writes it, and ignores every other kind', async () => {
    const changes = [
      { id: 'PRJ-1001', tenantId: 't', type: 'project', name: 'Not relayed' },
      { id: 'msg_broken', tenantId: 't', type: 'event', eventType: 'project.sung', timestamp: '2026-11-25T10:00:00.000Z', _etag: 'e' },
      { id: 'dlv_broken', tenantId: 't', type: 'delivery', status: 'Pending', _etag: 'e' },
      { id: 'job', type: 'ragJob', status: 'Queued', _etag: 'e' },
      null,
      'text',
    ];
    // Nothing here needs the database: a relay that tried would fail for want of its settings.
    await expect(relayChanges(changes)).resolves.toEqual(['msg_broken', 'dlv_broken', 'job']);
  });
});
