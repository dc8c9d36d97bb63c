// What the live bar does to the reader's input (_live.js): "Drop" takes the characters the model does not know out of
// the text and joins what is left as the reader would have typed it (issue 39 item 8: it left "is  dark  and"), and
// a status line names an input by its start and end.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadStatic } from "./load.mjs";

const { dropCharacters, shortInput } = await loadStatic(["_live.js"], ["dropCharacters", "shortInput"]);

test("a dropped character between two spaces leaves one space", () => {
  assert.equal(dropCharacters("The night is \u2014 dark \u2014 and cold", ["\u2014"]), "The night is dark and cold");
  assert.equal(dropCharacters("na\u00efve \u2014 caf\u00e9", ["\u00ef", "\u2014", "\u00e9"]), "nave caf");
  assert.equal(dropCharacters("a \u2014\u2014 b \u2014 \u2014 c", ["\u2014"]), "a b c");
});

test("inside a word the characters just go", () => {
  assert.equal(dropCharacters("na\u00efve caf\u00e9s", ["\u00ef", "\u00e9"]), "nave cafs");
  assert.equal(dropCharacters("x\u2014y", ["\u2014"]), "xy");
});

test("at the start or end of a line or of the text no space is left there", () => {
  assert.equal(dropCharacters("\u2014 hello \u2014", ["\u2014"]), "hello");
  assert.equal(dropCharacters("ROMEO.\n\u2014 But soft \u2014\nIt is", ["\u2014"]), "ROMEO.\nBut soft\nIt is");
  assert.equal(dropCharacters("\u2014", ["\u2014"]), "");
});

test("a dropped space-like character keeps two words apart", () => {
  assert.equal(dropCharacters("3\u00a0March\t1999", ["\u00a0", "\t"]), "3 March 1999");
  assert.equal(dropCharacters("end\r\nnext", ["\r"]), "end\nnext");
});

test("spaces the reader typed elsewhere are kept", () => {
  assert.equal(dropCharacters("two  spaces \u2014 here", ["\u2014"]), "two  spaces here");
  assert.equal(dropCharacters("nothing to drop  ", ["\u2014"]), "nothing to drop  ");
});

test("a status line names a long input by its start and end", () => {
  assert.equal(shortInput("3rd of March 1999"), "3rd of March 1999");
  assert.equal(shortInput("ROMEO.\nBut"), "ROMEO.\u23ceBut");
  const s = shortInput("x".repeat(30) + "y".repeat(30));
  assert.equal(Array.from(s).length, 40);
  assert.ok(s.startsWith("x".repeat(20)) && s.endsWith("y".repeat(19)) && s.includes("\u2026"), s);
});
