/**
 * The task pane of an Office add-in that lists and creates projects through the LMS API. The page
 * lives on an origin of its own, so every call is a cross-origin fetch that the API's CORS setting
 * must allow (docs/add-ins.md).
 *
 * config.json beside the page says where the API is (`apiBaseUrl`). Inside Office the token comes
 * from Office's single sign-on; in a plain browser from `tokenUrl`, which `npm run sample` serves in
 * place of Office.
 */
const config = await (await fetch('config.json')).json();
const officeHost = window.Office ? (await window.Office.onReady()).host : null;

const element = (id) => document.getElementById(id);
let nextPage;

async function accessToken() {
  // Office caches the token and renews it; the API's app registration pre-authorises Office, so no consent prompt shows.
  if (officeHost) return window.Office.auth.getAccessToken({ allowSignInPrompt: true, allowConsentPrompt: true });
  const response = await fetch(config.tokenUrl, { method: 'POST' });
  if (!response.ok) throw new Error(`No token from ${config.tokenUrl} (HTTP ${response.status})`);
  return (await response.json()).access_token;
}

/** Calls the API; an error answer becomes an Error with the API's own message. */
async function callApi(method, url, { json, headers = {} } = {}) {
  const response = await fetch(url, {
    method,
    headers: {
      Authorization: `Bearer ${await accessToken()}`,
      'Accept-Language': navigator.language,
      ...(json === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  if (response.ok) return response;
  const problem = await response.json().catch(() => ({}));
  throw new Error(`${problem.message ?? response.statusText} (HTTP ${response.status}, request ${response.headers.get('X-Request-Id')})`);
}

async function showProjects(url, append) {
  const response = await callApi('GET', url);
  const projects = await response.json();
  const list = element('projects');
  if (!append) list.replaceChildren();
  for (const project of projects) {
    const item = document.createElement('li');
    item.dataset.id = project.id;
    item.textContent = `${project.name} (${project.id}, ${project.status})`;
    list.append(item);
  }
  // More pages are announced by the Link header, a path on the API's host: resolve it against the URL asked, not this page's.
  const next = response.headers.get('Link')?.match(/<([^>]+)>\s*;\s*rel="next"/)?.[1];
  nextPage = next && new URL(next, response.url).href;
  element('more').hidden = !nextPage;
  element('status').textContent = `${list.children.length} projects shown.`;
}

async function createProject(name) {
  // The same key on a retry would return this project instead of making a second one.
  const created = await callApi('POST', `${config.apiBaseUrl}/projects`, { json: { name }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  // Location is a path on the API's host, not on this page's: resolve it against the API.
  const projectUrl = new URL(created.headers.get('Location'), config.apiBaseUrl).href;
  const project = await (await callApi('GET', projectUrl)).json();
  element('created-id').textContent = project.id;
  element('created-location').textContent = projectUrl;
  element('created-etag').textContent = created.headers.get('ETag');
  element('created').hidden = false;
  await showProjects(`${config.apiBaseUrl}/projects?limit=20`, false);
  element('status').textContent = `Created ${project.id}.`;
}

async function run(action) {
  element('status').textContent = 'Working…';
  try {
    await action();
  } catch (error) {
    // A fetch the browser refused (CORS, network) rejects with a TypeError and tells the page nothing more.
    const refused = error instanceof TypeError;
    element('status').textContent = refused
      ? `The API cannot be reached from this page (${error.message}): does its CORS setting allow ${location.origin}?`
      : error.message;
  }
}

element('token-source').textContent = officeHost
  ? `Signed in through Office (${officeHost}).`
  : `Not in Office: the token comes from ${new URL(config.tokenUrl, location.href).href}.`;
element('create').addEventListener('submit', (event) => {
  event.preventDefault();
  void run(() => createProject(element('name').value.trim()));
});
element('more').addEventListener('click', () => void run(() => showProjects(nextPage, true)));
await run(() => showProjects(`${config.apiBaseUrl}/projects?limit=20`, false));
