"""Server URLs: what a profile's ``base_url`` may be, and credentials kept out of every log line.

A ``base_url`` must be an absolute ``http``/``https`` URL with a host: anything else
(``file://``, a bare ``host:port``) is a profile error, not a connection error retried for
minutes. It may not carry user info (``http://alice:PW@host/v1``): HTTP libraries send that as
Basic auth instead of the profile's Bearer key, and log it with the URL. The key belongs in the
environment variable the profile's ``api_key_env`` names.

:func:`install_log_redaction` masks user info and secret-looking query values in every log
record of the process (ours and the HTTP libraries' own ``-v`` debug lines), whatever handler
prints it: a log record factory rather than a filter, because a filter on a logger does not see
records of its child loggers (``httpcore.http11``) and handlers belong to the application.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any
from urllib.parse import urlsplit

_HTTP_SCHEMES = ("http", "https")
_MASK = "***"
# scheme://userinfo@ -> scheme://***@ (userinfo: anything up to the first @ before the path).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]*@")
# ?api_key=... / &token=... / &sig=... query values.
_SECRET_QUERY = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|secret|password|sig|signature)=)[^&#\s]+"
)


def check_base_url(value: str, *, key_field: str = "api_key_env") -> str:
    """``value`` when it is an http(s) URL with a host and no user info; else ``ValueError``
    saying what is expected (never repeating credentials)."""
    try:
        parts = urlsplit(value)
        port = parts.port  # a port that is not a number raises here
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}); expected e.g. http://127.0.0.1:8000/v1") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError(
            "holds user info (user:password@), which would travel as Basic auth and appear in"
            f" logs; remove it. Put the API key in an environment variable and name that"
            f" variable in the profile's {key_field} (e.g. {key_field}: MY_API_KEY); it is sent"
            " as the Bearer token"
        )
    if parts.scheme.lower() not in _HTTP_SCHEMES:
        scheme = f"{parts.scheme}://" if parts.scheme else "no scheme"
        raise ValueError(
            f"must be an http:// or https:// URL (got {scheme}), e.g. http://127.0.0.1:8000/v1"
        )
    if not parts.hostname or any(c.isspace() for c in value) or port == 0:
        raise ValueError(
            "must name a host (and a port other than 0), without spaces, e.g."
            " http://127.0.0.1:8000/v1"
        )
    return value


def redact_urls(text: str) -> str:
    """``text`` with URL user info and secret query values replaced by ``***``."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(rf"\g<1>{_MASK}@", text)
    return _SECRET_QUERY.sub(rf"\g<1>{_MASK}", text)


_install_lock = threading.Lock()
_installed = False


def install_log_redaction() -> None:
    """Redact :func:`redact_urls` in every log record from now on (idempotent): the message
    with its arguments, and the traceback text of a logged exception."""
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            try:
                message = record.getMessage()
            except Exception:
                return record
            redacted = redact_urls(message)
            if redacted != message:
                record.msg, record.args = redacted, None
            if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
                text = logging.Formatter().formatException(record.exc_info)
                record.exc_text = redact_urls(text)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
