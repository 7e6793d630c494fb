"""``pipeline serve``: a local static server for a built site, standard library only.

It behaves the way readers expect a static host to behave, so a site can be tried locally
with the same clients (agents, the browser module in ``pipeline/assets``) that will read it
from GitHub Pages, Netlify or nginx (``build/nginx.conf`` and ``build/_headers`` configure the
same rules). Choices:

* Methods: GET and HEAD serve files; OPTIONS answers any CORS preflight with 204; any other
  method gets 405 with ``Allow: GET, HEAD, OPTIONS``.
* Content types: a file named ``index.json`` is ``application/hal+json; charset=utf-8`` (every
  directory's index is a HAL document); other ``.json`` is ``application/json;
  charset=utf-8``; ``.md`` is ``text/markdown; charset=utf-8`` (RFC 7763 asks for the
  charset); ``.js``/``.mjs`` ``text/javascript; charset=utf-8``; ``.bin`` and unknown
  suffixes ``application/octet-stream`` (see ``CONTENT_TYPES``). JSON is UTF-8 by
  definition, and RFC 8259 says a ``charset`` parameter has no effect on compliant
  recipients; we send it anyway for clients that decode text by the header. Every file
  response has ``X-Content-Type-Options: nosniff``.
* Load (``serve/connections.py``): one thread holds every connection between requests and reads
  request heads; 32 workers answer whole heads, so slow or idle clients hold no worker. A head
  has 10 s from its first byte (else 408), an idle keep-alive connection 15 s; at most 1024
  connections (half the descriptor limit) are open, the one waiting longest for a head making
  room; a listen backlog of 1024; 10 s per read or write while answering; a 500 for any
  unexpected error; request paths logged with control characters escaped (``SiteServer``).
  A connection the server closes after a response said ``Connection: close`` in it.
* Odd requests: a request line must be three words ending in ``HTTP/1.x`` (else 400; 505 for
  HTTP/2 and later; no HTTP/0.9), bytes that cannot start one (a TLS hello) or a field line
  without a name and colon (space before it, a folded line) get 400, a target over 4096
  characters 414, a head over 64 KiB 431; every such answer has a status line and closes the
  connection. A request body (a GET may have one) is dropped, never taken for the next
  request; one not in with its head (a slow one, chunked) is never waited for: the connection
  closes after the answer.
* Ranges (RFC 9110 §14): a single ``bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` on GET gets 206
  with ``Content-Range`` and exactly those bytes (an end past the file is clamped); a range
  starting at or past the end (positions of any length: 5,000 digits too), or ``bytes=-0``, gets 416 with ``Content-Range: bytes */size``.
  A malformed header, a unit other than ``bytes``, several ranges, a Range on HEAD, a
  suffix range of an empty file, or an ``If-Range`` that does not match the current ETag or
  Last-Modified are ignored: the full 200 response is sent, as RFC 9110 allows.
  Every file response carries ``Accept-Ranges: bytes``.
* Validators: a strong ``ETag`` ``"<size hex>-<mtime_ns hex>"`` (like nginx's, from the
  open file's ``fstat``) and ``Last-Modified``. ``If-None-Match`` (weak comparison, ``*``
  allowed) answers 304; ``If-Modified-Since`` is honoured only without ``If-None-Match``.
  ``Cache-Control: no-cache``: clients may keep copies but revalidate, because a local site
  is rebuilt under the server; but ``public, max-age=31536000, immutable`` for the content-named
  files of ``_search/`` (those in its folders), whose names never hold other bytes
  (``rules.cache_control``).
* CORS: every response, errors included, has ``Access-Control-Allow-Origin: *`` and
  ``Access-Control-Expose-Headers: Content-Range, Content-Length, ETag, Accept-Ranges``;
  preflight answers add ``Access-Control-Allow-Methods: GET, HEAD, OPTIONS``,
  ``Access-Control-Allow-Headers: Range, If-None-Match`` and a one-day ``Max-Age``.
* Directories: ``/foo/`` serves ``foo/index.html`` if present, else ``foo/index.json``, else
  404; never a listing. ``/foo`` naming a directory redirects (301) to ``/foo/`` so relative
  links resolve like on static hosts.
* Confinement: the URL path is percent-decoded once, then split on ``/``. A segment that is
  ``..`` or ``.``, contains a NUL (or a backslash where the system separates folders with one:
  on POSIX ``back\\slash.md`` is a file name and is served), or starts with ``.`` (hidden files, and the
  temporary files of an atomic write in progress; ``.well-known`` excepted) is refused with 404, as is anything whose
  real path (symlinks resolved) is outside the site directory, and anything that is not a
  regular file. A refused path answers exactly like a missing one, so nothing leaks.
* Logging: one line per request on stderr (method, path, status, bytes); ``log_requests=False``
  silences it.
* HTTP/1.1 with keep-alive (pipelined requests are answered in order).
* Prefix (``--prefix /docs/``, ``serve/prefix.py``): the site answers under that path only
  (elsewhere 404; ``/docs`` redirects to ``/docs/``), for a site built with that ``base_url``.
* ``--watch CONTENT`` (``serve/watch.py``): rebuilds on save; pages get a reload script.
"""

from pipeline.serve.rules import ByteRange, Unsatisfiable, content_type, parse_range
from pipeline.serve.server import SiteServer, make_server, serve

__all__ = ["ByteRange", "SiteServer", "Unsatisfiable", "content_type", "make_server", "parse_range", "serve"]
