"""A client for the ptxbench evaluation service (`ptxbench serve`; schemas/openapi.json).

    from ptxbench import Client
    c = Client("http://127.0.0.1:8737")            # token: token=... or $PTXBENCH_SERVE_TOKEN
    job = c.submit(source, task="gemm_n128_k2048", workload="M=93")
    record = c.wait(job["id"], timeout=600)         # long polls GET /v1/evaluations/{id}?wait=
"""

import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional

__all__ = ["Client", "ServiceError", "HTTPError", "Unreachable", "WaitTimeout"]


class ServiceError(Exception):
    """Base of the client's errors."""


class HTTPError(ServiceError):
    """The service answered with an error status; .status, .message (its "error" field) and
    .body (the parsed JSON, or the text)."""

    def __init__(self, method: str, url: str, status: int, message: str, body: Any = None):
        self.method, self.url, self.status, self.message, self.body = method, url, status, message, body
        super().__init__("%s %s: HTTP %d: %s" % (method, url, status, message))


class Unreachable(ServiceError):
    """No answer from the service: refused, no route, a name that does not resolve, a timeout."""


class WaitTimeout(ServiceError):
    """wait() gave up before the job finished; .job_id and .state (the last seen)."""

    def __init__(self, job_id: str, state: str, seconds: float):
        self.job_id, self.state = job_id, state
        super().__init__("evaluation %s not finished after %.0f s (state %s)" % (job_id, seconds, state))


class Client:
    """The service at `url` (http://host:port). The bearer token is `token`, else the variable
    named by `token_env` (PTXBENCH_SERVE_TOKEN, as `ptxbench serve` and `submit` use), else none.
    `timeout` is the seconds of one plain request."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 60.0,
                 token_env: str = "PTXBENCH_SERVE_TOKEN", outage_wait: float = 600.0):
        if not url.startswith(("http://", "https://")):
            url = "http://" + url
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(token_env) or None
        self.timeout = timeout
        # A 503 that carries Retry-After (the service's storage is down or locked for a while;
        # nothing was queued) is waited out, as `ptxbench submit` does, for this many seconds
        # of one outage at most; 0 raises it at once.
        self.outage_wait = outage_wait

    # -- the endpoints -------------------------------------------------------------------

    def health(self) -> Dict[str, Any]:
        """GET /v1/health: the queue's counts and the workers."""
        return self._request("GET", "/v1/health")[1]

    def tasks(self) -> List[Dict[str, Any]]:
        """GET /v1/tasks: the task definitions, without workloads."""
        return self._request("GET", "/v1/tasks")[1]

    def task(self, name: str) -> Dict[str, Any]:
        """GET /v1/tasks/{name}: one definition with its workloads."""
        return self._request("GET", "/v1/tasks/" + urllib.parse.quote(name, safe=""))[1]

    def submit(self, source: str, task: str, workload: Optional[str] = None,
               arch: Optional[str] = None, options: Optional[Dict[str, Any]] = None,
               tag: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """POST /v1/evaluations: queues one evaluation; returns {"id", "state", "result"}.
        options: trials, seed, sanitize, timeout, timing, timing_budget, verify, warmup,
        iterations, tolerance (schemas/openapi.json, EvaluationRequest)."""
        body: Dict[str, Any] = {"task": task, "source": source}
        if workload is not None:
            body["workload"] = workload
        if arch is not None:
            body["arch"] = arch
        if options:
            body["options"] = options
        if tag is not None:
            body["tag"] = tag
        return self._request("POST", "/v1/evaluations", body)[1]

    def submit_file(self, path: str, task: str, **kwargs: Any) -> Dict[str, Any]:
        """submit() with the source read from a .cu file."""
        with open(path, encoding="utf-8") as f:
            return self.submit(f.read(), task, **kwargs)

    def job(self, job_id: str) -> Dict[str, Any]:
        """GET /v1/evaluations/{id}/job: the job in the queue (state, attempts, worker, times)."""
        return self._request("GET", "/v1/evaluations/%s/job" % _id(job_id))[1]

    def result(self, job_id: str, wait: float = 0.0) -> Optional[Dict[str, Any]]:
        """GET /v1/evaluations/{id}?wait=: the evaluation record once the job has finished,
        waiting up to `wait` seconds on the server (which caps it); None if not finished."""
        path = "/v1/evaluations/%s" % _id(job_id)
        if wait > 0:
            path += "?wait=%.3f" % wait
        status, body = self._request("GET", path, timeout=self.timeout + wait)
        return body if status == 200 else None

    def record(self, job_id: str) -> Dict[str, Any]:
        """The record of a finished job; ServiceError if it has not finished."""
        rec = self.result(job_id)
        if rec is None:
            raise ServiceError("evaluation %s has not finished" % job_id)
        return rec

    def wait(self, job_id: str, timeout: Optional[float] = None, poll: float = 30.0) -> Dict[str, Any]:
        """The record, long polling until the job finishes; WaitTimeout after `timeout` seconds
        (None: forever). `poll` is the longest single wait asked of the server."""
        start = time.monotonic()
        state = "queued"
        while True:
            left = None if timeout is None else timeout - (time.monotonic() - start)
            if left is not None and left <= 0:
                raise WaitTimeout(job_id, state, timeout)
            step = poll if left is None else max(0.0, min(poll, left))
            path = "/v1/evaluations/%s?wait=%.3f" % (_id(job_id), step)
            status, body = self._request("GET", path, timeout=self.timeout + step)
            if status == 200:
                return body
            state = body.get("state", state) if isinstance(body, dict) else state
            if step <= 0.001:  # a server that answers at once: do not spin
                time.sleep(0.05)

    def evaluate(self, source: str, task: str, timeout: Optional[float] = None,
                 **kwargs: Any) -> Dict[str, Any]:
        """submit() then wait(): the evaluation record."""
        return self.wait(self.submit(source, task, **kwargs)["id"], timeout=timeout)

    # -- HTTP ----------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None):
        give_up = time.monotonic() + self.outage_wait
        while True:
            try:
                return self._request_once(method, path, body, timeout)
            except HTTPError as e:
                wait = _retry_after(e)
                if e.status != 503 or wait is None or time.monotonic() + wait > give_up:
                    raise
                time.sleep(wait)

    def _request_once(self, method: str, path: str, body: Any, timeout: Optional[float]):
        url = self.url + path
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                return resp.status, _parse(resp.read())
        except urllib.error.HTTPError as e:
            parsed = _parse(e.read())
            message = parsed.get("error") if isinstance(parsed, dict) else None
            err = HTTPError(method, url, e.code, message or str(parsed or e.reason), parsed)
            err.retry_after = e.headers.get("Retry-After") if e.headers else None
            raise err from None
        except urllib.error.URLError as e:
            raise Unreachable("%s %s: the service cannot be reached (%s)" % (method, url, e.reason)) from None
        except (socket.timeout, TimeoutError, ConnectionError) as e:
            raise Unreachable("%s %s: no answer (%s)" % (method, url, e)) from None


def _retry_after(e: "HTTPError") -> Optional[float]:
    """The seconds a 503's Retry-After asks for (at least 0.1, at most 30), or None."""
    value = getattr(e, "retry_after", None)
    try:
        return min(30.0, max(0.1, float(value))) if value is not None else None
    except ValueError:
        return None


def _id(job_id: str) -> str:
    return urllib.parse.quote(str(job_id), safe="")


def _parse(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
