"""What the commands' progress bars share."""

from __future__ import annotations

from django.core.management.base import OutputWrapper


class BarStream:
    """Writes tqdm's output through a command's stream as it comes: the stream
    otherwise ends every write with a new line, which breaks a bar redrawn with \\r."""

    def __init__(self, stream: OutputWrapper) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        self.stream.write(text, ending="")

    def flush(self) -> None:
        self.stream.flush()
