// Widgets of one live group share their input within one notebook only (_live.js joinGroup): JupyterLab shows
// several notebooks in one page, and a group name used in two of them must not link them. A page of the built book
// is one notebook.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadStatic } from "./load.mjs";

const { joinGroup } = await loadStatic(["_live.js"], ["joinGroup", "LIVE_GROUPS"]);

const page = { name: "page" };
// A widget root in notebook `nb` (null: in the page, outside any notebook); connected once attached.
function root(nb, connected = true) {
  return { closest: (sel) => (sel === ".jp-Notebook" ? nb : null), isConnected: connected, ownerDocument: page };
}
const follow = () => {};

test("a group's peers are the members in the same notebook", () => {
  const nb1 = { n: 1 }, nb2 = { n: 2 };
  const a = joinGroup("t-dates", root(nb1), follow), b = joinGroup("t-dates", root(nb1), follow);
  const c = joinGroup("t-dates", root(nb2), follow), d = joinGroup("t-other", root(nb1), follow);
  assert.deepEqual(a.peers(), [b]);
  assert.deepEqual(c.peers(), []);
  assert.deepEqual(d.peers(), []);
  b.leave();
  assert.deepEqual(a.peers(), []);
  [a, c, d].forEach((m) => m.leave());
});

test("in a book page (no notebook element) the page is the notebook", () => {
  const a = joinGroup("t-book", root(null), follow), b = joinGroup("t-book", root(null), follow);
  assert.deepEqual(a.peers(), [b]);
  assert.deepEqual(b.peers(), [a]);
  a.leave(); b.leave();
});

test("a view not yet in the page shares once it is", () => {
  const nb = { n: 3 }, el = root(null, false);
  const a = joinGroup("t-late", el, follow), b = joinGroup("t-late", root(nb), follow);
  assert.deepEqual(a.peers(), []);
  assert.deepEqual(b.peers(), []); // a's notebook is not known yet
  el.closest = () => nb;
  el.isConnected = true;
  assert.deepEqual(a.peers(), [b]);
  assert.deepEqual(b.peers(), [a]);
  a.leave(); b.leave();
});
