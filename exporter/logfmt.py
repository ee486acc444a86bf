"""Structured logs to stderr in logfmt, as Prometheus exporters write them:
`ts=2024-05-01T12:00:00.123Z level=info logger=xgpu.exporter msg="listening" address=:19400`.
Extra fields come from `log.info("...", extra={"key": value})`.
"""

from __future__ import annotations

import logging
import sys
import time

from advisor.terminal import escape_controls

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


def _value(value: object) -> str:
    """Bare when it can be, else quoted; a control character (from a pod name, an error
    body...) is escaped, so it never reaches the terminal or breaks the line in two."""
    text = str(value)
    if text and escape_controls(text) == text and not any(c in text for c in ' "='):
        return text
    return '"' + escape_controls(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        fields = [
            f"ts={stamp}.{int(record.msecs):03d}Z",
            f"level={record.levelname.lower()}",
            f"logger={record.name}",
            f"msg={_value(record.getMessage())}",
        ]
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                fields.append(f"{key}={_value(value)}")
        if record.exc_info:
            fields.append(f"exc={_value(self.formatException(record.exc_info))}")
        return " ".join(fields)


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
