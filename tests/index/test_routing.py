"""lockkit.index.routing: how links of a PyTorch index page become effective and official URLs."""

from __future__ import annotations

import urllib.parse
import urllib.request

import pytest

from lockkit._internal.redact import NO_SECRETS
from lockkit.index.pages import parse_links
from lockkit.index.routing import RoutingIndex, resolve_href
from lockkit.index.urls import Mirrors

PT = "https://download.pytorch.org"
R2 = "https://download-r2.pytorch.org"
PAGE = f"{PT}/whl/cu126/torch/"
WHEEL = "torch-2.5.1%2Bcu126-cp311-cp311-linux_x86_64.whl"
OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({})).open  # loopback, no proxy
STATIC = Mirrors({PT: "http://m.test/pytorch", R2: "http://m.test/r2"}, NO_SECRETS)
NONE = Mirrors(None, NO_SECRETS)


@pytest.mark.parametrize("href,effective_page,mirrors,expected", [
    # the official page, no mirror: links as they are
    (f"{R2}/whl/cu126/{WHEEL}", PAGE, NONE, f"{R2}/whl/cu126/{WHEEL}"),
    ("/whl/MarkupSafe-3.0.2-py3-none-any.whl", PAGE, NONE,
     f"{PT}/whl/MarkupSafe-3.0.2-py3-none-any.whl"),
    # a static copy under a path: the second host through its own mirror ...
    (f"{R2}/whl/cu126/{WHEEL}", "http://m.test/pytorch/whl/cu126/torch/", STATIC,
     f"http://m.test/r2/whl/cu126/{WHEEL}"),
    # ... and a root-relative link resolved on the official host, then mirrored
    ("/whl/MarkupSafe-3.0.2-py3-none-any.whl", "http://m.test/pytorch/whl/cu126/torch/", STATIC,
     "http://m.test/pytorch/whl/MarkupSafe-3.0.2-py3-none-any.whl"),
    # a copied page's link to another host is left alone
    ("https://files.example/packages/ab/numpy-2.1.0-py3-none-any.whl",
     "http://m.test/pytorch/whl/cu126/numpy/", STATIC,
     "https://files.example/packages/ab/numpy-2.1.0-py3-none-any.whl"),
    # a rewriting proxy's relative link resolves on the page actually fetched
    (f"../../packages/ab/cd/{WHEEL}#sha256=00", "http://art.test/pt/cu126/simple/torch/",
     Mirrors({f"{PT}/whl/cu126": "http://art.test/pt/cu126/simple"}, NO_SECRETS),
     f"http://art.test/pt/cu126/packages/ab/cd/{WHEEL}#sha256=00"),
    # no link carries credentials: not the page's, not a mirror's, not the link's own
    # (uv finds them in the netrc lockkit writes for it)
    (f"../../packages/{WHEEL}", "http://u:t@art.test/pt/cu126/simple/torch/", NONE,
     f"http://art.test/pt/cu126/packages/{WHEEL}"),
    (f"http://u:t@art.test/x/{WHEEL}", "http://u:t@art.test/pt/cu126/simple/torch/", NONE,
     f"http://art.test/x/{WHEEL}"),
    ("/whl/MarkupSafe-3.0.2-py3-none-any.whl", "http://u:t@m.test/pytorch/whl/cu126/torch/",
     Mirrors({PT: "http://u:t@m.test/pytorch"}, NO_SECRETS),
     "http://m.test/pytorch/whl/MarkupSafe-3.0.2-py3-none-any.whl"),
    (f"http://other.test/x/{WHEEL}", "http://u:t@art.test/pt/cu126/simple/torch/", NONE,
     f"http://other.test/x/{WHEEL}"),
])
def test_resolve_href(href, effective_page, mirrors, expected):
    assert resolve_href(href, PAGE, effective_page, mirrors) == expected


def test_parse_links_unescapes_and_keeps_attributes():
    links = parse_links('<a href="/a&amp;b.whl#sha256=1" data-core-metadata="sha256=2">'
                        'a+b.whl</a><br/><a>no href</a><!--TIMESTAMP 1-->')
    assert links == [{"href": "/a&b.whl#sha256=1", "data-core-metadata": "sha256=2",
                      "#text": "a+b.whl"}]


def _routing(page: str, mirrors: Mirrors, status: int = 200) -> RoutingIndex:
    fetched = []

    def fetch(url: str) -> tuple[int, str]:
        fetched.append(url)
        return status, page

    routing = RoutingIndex(family=("torch", "pytorch-triton-rocm"),
                           official_index=f"{PT}/whl/cu126", mirrors=mirrors, file_hosts=(R2,),
                           fetch=fetch)
    routing.fetched = fetched  # type: ignore[attr-defined]
    return routing


def test_official_urls_of_a_rewriting_proxy_follow_the_official_layout():
    page = f'<a href="../../packages/ab/cd/{WHEEL}#sha256=ff">x</a>'
    routing = _routing(page, Mirrors({f"{PT}/whl/cu126": "http://u:t@art.test/pt/cu126/simple"},
                                     NO_SECRETS))
    listed = routing.page("torch").files["torch-2.5.1+cu126-cp311-cp311-linux_x86_64.whl"]
    assert listed.url == f"http://art.test/pt/cu126/packages/ab/cd/{WHEEL}"
    assert listed.official == f"{R2}/whl/cu126/{WHEEL}"
    fetched = routing.fetched  # type: ignore[attr-defined]
    assert fetched == ["http://u:t@art.test/pt/cu126/simple/torch/"]


def test_the_routing_index_serves_family_pages_and_refuses_the_rest():
    page = f'<a href="{R2}/whl/cu126/{WHEEL}#sha256=ff" data-core-metadata="sha256=1">t</a>'
    with _routing(page, STATIC) as routing:
        def get(name: str) -> tuple[int, str]:
            try:
                with OPEN(f"{routing.url}/{name}/") as resp:
                    return resp.status, resp.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, ""

        status, html = get("Torch")
        assert status == 200
        assert f'href="http://m.test/r2/whl/cu126/{WHEEL}#sha256=ff"' in html
        assert 'data-core-metadata="sha256=1"' in html
        assert get("numpy")[0] == 404  # not family: uv asks the default index
        assert get("markupsafe")[0] == 404
    assert routing.listed("torch", f"http://m.test/r2/whl/cu126/{WHEEL}") is not None
    assert routing.listed("torch", f"http://evil.test/whl/cu126/{WHEEL}") is None


def test_a_family_page_the_index_does_not_serve_is_empty_not_a_fallback():
    with _routing("", STATIC, status=403) as routing:
        with OPEN(f"{routing.url}/pytorch-triton-rocm/") as resp:
            assert resp.status == 200 and "<a " not in resp.read().decode()
    assert routing.pages["pytorch-triton-rocm"].status == 403


def test_a_prefetched_page_is_fetched_once_and_only_asked_pages_count():
    """compile fetches the family pages its inputs name before uv asks: uv's request while
    that fetch is under way waits for it (one fetch), and only pages uv asked for are what
    an error is explained by."""
    import threading
    import time

    from lockkit.index.routing import RoutingIndex
    from lockkit.index.urls import Mirrors

    calls: list[str] = []
    page = ('<a href="https://download.pytorch.org/whl/cpu/torch-2.5.1%2Bcpu-cp311-cp311-'
            'linux_x86_64.whl#sha256=' + "0" * 64 + '">torch</a>')

    def slow(url: str) -> tuple[int, str]:
        calls.append(url)
        time.sleep(0.2)
        return 200, page

    done = threading.Event()
    with RoutingIndex(family=("torch", "triton"),
                      official_index="https://download.pytorch.org/whl/cpu",
                      mirrors=Mirrors({}, NO_SECRETS), file_hosts=(), fetch=slow) as routing:
        routing.prefetch(["Torch", "numpy"], then=done.set)
        time.sleep(0.05)  # the prefetch is under way
        code, body = routing.answer(urllib.parse.urlsplit(routing.url).path + "/torch/")
        assert done.wait(5)
    assert code == 200 and b"torch-2.5.1%2Bcpu" in body
    assert calls == ["https://download.pytorch.org/whl/cpu/torch/"]  # once; numpy: not family
    assert routing.asked == {"torch"} and set(routing.pages) == {"torch"}


def test_an_unreachable_page_uv_asks_for_is_reported_once_and_a_prefetched_one_not():
    """The caller stops uv when a page uv waits for cannot be fetched: *on_failure* hears of
    the first such page, once, before uv gets its 502; a page only prefetched (uv may
    never ask for it) is not reported."""
    from lockkit.errors import IndexError_

    def dead(url: str) -> tuple[int, str]:
        raise IndexError_(f"cannot fetch {url}: no answer within 2 s")

    heard: list[str] = []
    with RoutingIndex(family=("torch", "triton"), official_index=f"{PT}/whl/cu128",
                      mirrors=STATIC, file_hosts=(), fetch=dead,
                      on_failure=lambda page: heard.append(page.name)) as routing:
        routing.prefetch(["torch", "triton"], wait=True)
        assert heard == [] and routing.failed is None
        prefix = urllib.parse.urlsplit(routing.url).path
        assert routing.answer(f"{prefix}/triton/")[0] == 502
        assert routing.answer(f"{prefix}/torch/")[0] == 502
        assert routing.answer(f"{prefix}/triton/")[0] == 502  # uv's retry
    assert heard == ["triton"] and routing.failed is routing.pages["triton"]
    assert routing.failed.error == "cannot fetch http://m.test/pytorch/whl/cu128/triton/: " \
        "no answer within 2 s"


def test_the_routing_server_speaks_http_1_1_as_uv_needs():
    """lockkit's own loopback server: kept-alive GETs answered in order on one connection
    (http.client, as a client library sends them), HTTP/1.0 and ``Connection: close``
    honoured, anything but GET refused, a request that is not HTTP closed without an
    answer; and the port is closed when the compile ends."""
    import http.client
    import socket

    from lockkit.index.routing import RoutingIndex
    from lockkit.index.urls import Mirrors

    def fetch(url: str) -> tuple[int, str]:
        return 404, "no such page"

    with RoutingIndex(family=("torch",), official_index="https://download.pytorch.org/whl/cpu",
                      mirrors=Mirrors({}, NO_SECRETS), file_hosts=(), fetch=fetch) as routing:
        parts = urllib.parse.urlsplit(routing.url)
        port, simple = int(parts.port or 0), parts.path
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        answers = []
        for path in (f"{simple}/numpy/", f"{simple}/torch/", f"{simple}/Torch/?x=1",
                     "/elsewhere"):
            conn.request("GET", path)
            resp = conn.getresponse()
            answers.append((resp.status, resp.getheader("Cache-Control"), resp.read()))
        sock = conn.sock
        conn.request("POST", f"{simple}/torch/", body=b"x")
        refused = conn.getresponse()
        assert refused.status == 405 and refused.read() == b"only GET"
        assert conn.sock is sock  # one connection for all of them
        conn.close()
        assert [a[0] for a in answers] == [404, 200, 200, 404]
        assert answers[1][1] == "no-store"
        assert b"<html>" in answers[1][2]  # refused upstream: an empty page, uv stops here

        for request in (f"GET {simple}/numpy/ HTTP/1.0\r\n\r\n".encode(),
                        f"GET {simple}/numpy/ HTTP/1.1\r\nConnection: close\r\n\r\n".encode()):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                raw.sendall(request)
                got = b""
                while chunk := raw.recv(65536):  # the server closes: the loop ends
                    got += chunk
            assert got.startswith(b"HTTP/1.1 404 Not Found\r\n")
            assert b"Connection: close\r\n" in got
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(b"HELLO\r\n\r\n")
            assert raw.recv(65536) == b""  # not HTTP: closed, nothing said
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_quiet_waits_for_the_end_of_a_burst_and_no_longer_than_its_limit():
    import threading
    import time
    import urllib.error
    import urllib.request

    from lockkit.index.routing import RoutingIndex
    from lockkit.index.urls import Mirrors

    with RoutingIndex(family=("torch",), official_index="https://download.pytorch.org/whl/cpu",
                      mirrors=Mirrors({}, NO_SECRETS), file_hosts=(),
                      fetch=lambda url: (404, "")) as routing:
        start = time.monotonic()
        routing.quiet(idle=0.01, limit=0.2)  # nobody asks: the limit
        assert 0.2 <= time.monotonic() - start < 2.0  # 10x the limit

        def burst() -> None:
            for i in range(5):
                try:
                    urllib.request.urlopen(f"{routing.url}/pkg{i}/", timeout=10)
                except urllib.error.HTTPError:
                    pass
                time.sleep(0.02)

        asker = threading.Thread(target=burst)
        start = time.monotonic()
        asker.start()
        routing.quiet(idle=0.25, limit=30)
        waited, answered = time.monotonic() - start, routing.answered
        asker.join()
        assert answered >= 1 and time.monotonic() - routing.last_answer >= 0.25
        assert waited < 30  # an idle spell after the answers ended it, not the limit
