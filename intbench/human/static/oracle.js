// Oracle condition: clicking in the student's text chooses where the message goes.
// The chosen place is the character offset of the click in the trace text; a
// marker (an empty element, so it adds no characters) shows it.
(function () {
  const trace = document.getElementById("trace");
  const field = document.getElementById("position");
  const label = document.getElementById("position-label");
  const marker = document.createElement("span");
  marker.className = "marker";

  function caretAt(x, y) {
    if (document.caretPositionFromPoint) {
      const pos = document.caretPositionFromPoint(x, y);
      return pos && { node: pos.offsetNode, offset: pos.offset };
    }
    const range = document.caretRangeFromPoint && document.caretRangeFromPoint(x, y);
    return range && { node: range.startContainer, offset: range.startOffset };
  }

  trace.addEventListener("click", function (event) {
    const caret = caretAt(event.clientX, event.clientY);
    if (!caret || !trace.contains(caret.node)) return;
    const before = document.createRange();
    before.setStart(trace, 0);
    before.setEnd(caret.node, caret.offset);
    const position = before.toString().length;
    marker.remove();
    before.collapse(false);
    before.insertNode(marker);
    trace.normalize();
    field.value = String(position);
    const total = Number(trace.dataset.length);
    label.textContent = "Your message goes after character " + position + " of " + total +
      " (" + Math.round((100 * position) / Math.max(total, 1)) + "% of the reasoning).";
  });
})();
