// Preloaded into the conformance CLI (node --import): it has no option for request
// headers, so this adds "Authorization: Bearer $MCP_BEARER" to every request it sends
// to the server under test ($MCP_TARGET's port), through global fetch, undici's global
// dispatcher and node:http (scenarios use all three).
import http from "node:http";
import { createRequire, syncBuiltinESMExports } from "node:module";

const require = createRequire(`${process.env.CONFORMANCE_DIR}/node_modules/`);
const undici = require("undici");
const bearer = `Bearer ${process.env.MCP_BEARER}`;
const port = new URL(process.env.MCP_TARGET).port;

const targets = (url) => {
  try {
    return new URL(String(url)).port === port;
  } catch {
    return false;
  }
};

undici.setGlobalDispatcher(
  new undici.Agent().compose((dispatch) => (options, handler) => {
    if (targets(options.origin)) {
      const headers = options.headers;
      options = Array.isArray(headers)
        ? { ...options, headers: [...headers, "authorization", bearer] }
        : { ...options, headers: { ...(headers || {}), authorization: bearer } };
    }
    return dispatch(options, handler);
  }),
);

const fetchBefore = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const url = typeof input === "string" || input instanceof URL ? String(input) : input.url;
  if (targets(url)) {
    const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
    if (!headers.has("authorization")) headers.set("authorization", bearer);
    init = { ...init, headers };
  }
  return fetchBefore(input, init);
};

const requestBefore = http.request;
http.request = function (options, ...rest) {
  if (options && typeof options === "object" && !(options instanceof URL) && String(options.port) === port) {
    const headers = { ...(options.headers || {}) };
    if (!Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) {
      headers.authorization = bearer;
    }
    options = { ...options, headers };
  }
  return requestBefore.call(this, options, ...rest);
};
syncBuiltinESMExports();
