// Check your understanding (seqviz/widgets/quiz.py): a question, its choices as native radio buttons (one right
// answer) or checkboxes (several), a "Check" button, and under each picked choice why it is right or wrong. Right and
// wrong are said in words (✓ Right / ✗ Not quite), not by colour alone; the verdict line is announced politely.

let QUIZ_COUNT = 0; // radio groups need a page-unique name

// Plain text with `code` spans: backtick pairs become <code>, everything else is text (never HTML).
function richText(parent, text) {
  const parts = String(text).split("`");
  parts.forEach((p, i) => {
    if (!p) return;
    parent.appendChild(i % 2 ? h("code", "sv-quiz-code", p) : document.createTextNode(p));
  });
  return parent;
}

// Whether the picked indices are exactly the right ones (Quiz.grade in Python is the same rule).
function isRight(choices, picked) {
  const right = choices.map((c, i) => (c.correct ? i : -1)).filter((i) => i >= 0);
  return picked.length === right.length && right.every((i) => picked.includes(i));
}

function render({ model, el }) {
  const uid = `sv-quiz-${++QUIZ_COUNT}-${Math.random().toString(36).slice(2, 8)}`;
  const root = h("div", "seqviz sv-quiz");
  el.appendChild(root);

  const draw = () => {
    root.replaceChildren();
    const choices = model.get("choices") || [];
    const multiple = !!model.get("multiple");
    const form = h("fieldset", "sv-quiz-set");
    const legend = h("legend", "sv-quiz-legend");
    const title = model.get("title");
    if (title) legend.appendChild(h("span", "sv-quiz-title", title));
    legend.appendChild(richText(h("span", "sv-quiz-question"), model.get("question")));
    form.appendChild(legend);
    if (multiple) form.appendChild(h("div", "sv-quiz-hint", "Select every answer that applies."));

    const rows = choices.map((c, i) => {
      const row = h("div", "sv-quiz-choice");
      const input = h("input");
      input.type = multiple ? "checkbox" : "radio";
      input.name = uid;
      input.value = String(i);
      input.id = `${uid}-${i}`;
      const label = h("label");
      label.htmlFor = input.id;
      richText(label, c.text);
      const why = h("div", "sv-quiz-why");
      why.id = `${uid}-${i}-why`;
      why.hidden = true;
      input.setAttribute("aria-describedby", why.id);
      row.append(input, label, why);
      form.appendChild(row);
      return { row, input, why, c };
    });

    const bar = h("div", "sv-quiz-bar");
    const button = h("button", "sv-quiz-check", "Check");
    button.type = "button";
    const status = h("div", "sv-quiz-status");
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    bar.append(button, status);
    form.appendChild(bar);
    root.appendChild(form);

    const reset = () => {
      for (const r of rows) { r.why.hidden = true; r.why.replaceChildren(); r.row.classList.remove("sv-right", "sv-wrong"); }
      status.textContent = "";
      root.classList.remove("sv-quiz-done");
    };
    for (const r of rows) r.input.addEventListener("change", reset);

    button.addEventListener("click", () => {
      reset();
      const picked = rows.filter((r) => r.input.checked).map((r) => Number(r.input.value));
      if (!picked.length) {
        status.textContent = multiple ? "Pick at least one answer first." : "Pick an answer first.";
        return;
      }
      const ok = isRight(choices, picked);
      // the picked choices say why; once the answer is right, every choice does
      for (const r of rows) {
        if (!(r.input.checked || ok)) continue;
        r.row.classList.add(r.c.correct ? "sv-right" : "sv-wrong");
        r.why.appendChild(h("strong", null, r.c.correct ? "\u2713 Right: " : "\u2717 Not quite: "));
        richText(r.why, r.c.why);
        r.why.hidden = false;
      }
      if (ok) root.classList.add("sv-quiz-done");
      status.textContent = ok ? "\u2713 Correct." : multiple
        ? "\u2717 Not yet: read why under your answers, change them and check again."
        : "\u2717 Not yet: read why under your answer, then try another.";
    });
  };
  draw();
  noteFonts(root, []); // no labels drawn by script: the smallest text is the CSS's 12 px title (data-min-font, issue 33)
  return onChanges(model, { all: ["question", "choices", "multiple", "title"] }, draw);
}

export default { render };
