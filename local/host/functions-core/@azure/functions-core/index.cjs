'use strict';
// The Azure Functions host supplies `@azure/functions-core` to the Node worker; `@azure/functions`
// registers each app.http/app.storageQueue call through it. The local host puts this folder on
// NODE_PATH so that it receives every registration (name, bindings, handler) exactly as Azure would.

const registrations = [];
const hooks = [];
let programmingModel;

module.exports = {
  registrations,
  hooks,
  registerFunction(metadata, callback) {
    registrations.push({ metadata, callback });
    return { dispose() {} };
  },
  registerHook(hookName, callback) {
    hooks.push({ hookName, callback });
    return { dispose() {} };
  },
  setProgrammingModel(model) {
    programmingModel = model;
  },
  getProgrammingModel() {
    return programmingModel;
  },
  log(level, category, message) {
    if (level === 'error' || level === 'critical') console.error(message);
    else if (level === 'warning') console.warn(message);
    else if (level !== 'debug' && level !== 'trace') console.log(message);
  },
};
