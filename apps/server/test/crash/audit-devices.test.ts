import { auditCrashSuite } from '../helpers/audit-crash.js';

auditCrashSuite('devices and log requests', [
  {
    name: 'decommission',
    action: 'device.decommission',
    prepare: async (f) => {
      await f.device('crash-decommission');
      return {
        request: { method: 'DELETE', url: '/api/v1/devices/crash-decommission' },
        observe: { method: 'GET', url: '/api/v1/devices/crash-decommission' },
      };
    },
  },
  {
    name: 'log request',
    action: 'device.log-request',
    prepare: async (f) => {
      await f.device('crash-logs');
      const db = f.t.testStore.store.db;
      return {
        request: { method: 'POST', url: '/api/v1/devices/crash-logs/log-requests' },
        // no route lists a device's log requests
        observe: () => db.selectFrom('log_requests').select('id').where('tenant_id', '=', f.t.tenantId).execute(),
      };
    },
  },
]);
