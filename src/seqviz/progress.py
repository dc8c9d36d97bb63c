"""One progress bar for every training loop of the package: ``tqdm.auto``, whose stored text reads as finished.

In a notebook ``tqdm.auto`` draws a widget, and the notebook stores, beside the widget, a plain-text copy of the bar
as it was when it first appeared ("train: 0%| 0/282"). A reader without the saved widget state (a repository
preview, a text-only viewer) sees only that copy. :func:`progress` displays the widget under a display id and, when
the bar closes, updates that display, so the stored copy is the finished bar ("train: 100%| 282/282 ..."). Outside a
notebook it is plain ``tqdm.auto``.
"""
from __future__ import annotations

import functools

__all__ = ["progress"]


def progress(total: int | None = None, desc: str = "train", **kwargs):
    """A ``tqdm.auto`` bar of ``total`` steps; in a notebook the stored display is updated when it closes."""
    from tqdm.auto import tqdm
    from tqdm.notebook import tqdm_notebook

    if not issubclass(tqdm, tqdm_notebook):             # a terminal, or no ipywidgets: nothing is stored
        return tqdm(total=total, desc=desc, **kwargs)
    return _notebook_bar_class()(total=total, desc=desc, **kwargs)


@functools.cache
def _notebook_bar_class():
    from IPython.display import display
    from tqdm.auto import tqdm

    class NotebookBar(tqdm):
        """tqdm's notebook bar, displayed under a display id that :meth:`close` updates."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, display=False, **kwargs)
            self._handle = None
            if not self.disable:
                self._handle = display(self.container, display_id=True)
                self.displayed = True

        def close(self):
            super().close()
            handle, self._handle = getattr(self, "_handle", None), None
            if handle is not None:                      # the stored text becomes the finished bar
                handle.update(self.container)

    return NotebookBar

