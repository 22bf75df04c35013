"""lockkit.index.urls: the official, effective and printable forms of an index or file URL."""

from __future__ import annotations

import pytest

from lockkit._internal.redact import NO_SECRETS
from lockkit.index.urls import (
    Mirrors,
    expand,
    requirement_form,
    secrets_of,
    twin,
    unapply_mirrors,
)

WHEEL = "numpy-2.1.0-cp311-cp311-linux_x86_64.whl"


@pytest.fixture
def env(monkeypatch):
    # distinct hosts: every value of the project's secrets is concealed wherever it shows up
    monkeypatch.setenv("LK_WHOLE", "http://u:s3cret@creds.test:8080/private/simple")
    monkeypatch.setenv("LK_BARE", "http://bare.test:8080/private/simple")
    monkeypatch.setenv("LK_HOST", "host.test")


@pytest.mark.parametrize("official,effective", [
    # a variable holding a whole URL: written where the host goes, read back as its URL
    ("https://${LK_BARE}", "http://bare.test:8080/private/simple"),
    (f"https://${{LK_BARE}}/numpy/{WHEEL}", f"http://bare.test:8080/private/simple/numpy/{WHEEL}"),
    ("https://${LK_WHOLE}/numpy/", "http://u:s3cret@creds.test:8080/private/simple/numpy/"),
    # a variable holding a host name stays a host name
    ("https://${LK_HOST}/simple", "https://host.test/simple"),
    ("http://${LK_HOST}:81/${LK_HOST}/x", "http://host.test:81/host.test/x"),
])
def test_expand_reads_a_whole_url_placeholder_back_as_its_url(env, official, effective):
    assert expand(official) == effective


def test_the_official_form_of_a_whole_url_variable_is_a_url_without_its_value(env):
    secrets = secrets_of(["${LK_BARE}", "${LK_WHOLE}"])  # as loading the project reads them
    mirrors = Mirrors(None, secrets)
    index = mirrors.effective("${LK_BARE}")  # as compile fills it in
    assert mirrors.official("${LK_BARE}") == "https://${LK_BARE}"
    assert mirrors.official(f"{index}/numpy/{WHEEL}") == f"https://${{LK_BARE}}/numpy/{WHEEL}"
    assert expand(mirrors.official(f"{index}/numpy/{WHEEL}")) == f"{index}/numpy/{WHEEL}"
    # credentials in the value: stripped first, so the host is written as it is
    creds = expand("${LK_WHOLE}")
    assert unapply_mirrors(f"{creds}/numpy/{WHEEL}", {}, secrets) == \
        f"http://creds.test:8080/private/simple/numpy/{WHEEL}"


def test_a_leading_placeholder_that_is_no_url_is_left_alone(monkeypatch):
    monkeypatch.setenv("LK_SCHEME", "https")
    assert unapply_mirrors("${LK_SCHEME}://scheme.test/simple", {}, NO_SECRETS) == \
        "${LK_SCHEME}://scheme.test/simple"


@pytest.mark.parametrize("url,written", [
    ("https://${INDEX_URL}", "${INDEX_URL}"),
    (f"https://${{INDEX_URL}}/numpy/{WHEEL}", f"${{INDEX_URL}}/numpy/{WHEEL}"),
    ("https://${HOST}.example/simple", "https://${HOST}.example/simple"),
    ("https://idx.test/${TOKEN}/simple", "https://idx.test/${TOKEN}/simple"),
])
def test_requirement_form_gives_pip_and_uv_the_placeholder_they_fill_in(url, written):
    assert requirement_form(url) == written


@pytest.mark.parametrize("official,other", [
    ("https://download-r2.pytorch.org/whl/cu126/torch-2.7.0%2Bcu126-cp311-cp311-linux_x86_64.whl",
     "https://download.pytorch.org/whl/cu126/torch-2.7.0%2Bcu126-cp311-cp311-linux_x86_64.whl"),
    (f"https://download.pytorch.org/whl/{WHEEL}", f"https://download-r2.pytorch.org/whl/{WHEEL}"),
    ("https://DOWNLOAD.pytorch.org/whl/x.whl", "https://download-r2.pytorch.org/whl/x.whl"),
    # no twin: another host, another scheme or port, a host that only ends like one
    (f"https://files.example/whl/{WHEEL}", None),
    (f"http://download.pytorch.org/whl/{WHEEL}", None),
    (f"https://download.pytorch.org:8443/whl/{WHEEL}", None),
    (f"https://download.pytorch.org.example/whl/{WHEEL}", None),
])
def test_a_pytorch_file_host_has_the_other_as_its_twin_with_the_same_path(official, other):
    assert twin(official) == other


@pytest.mark.parametrize("mirrors,said", [
    ({}, "the PyTorch index https://download.pytorch.org/whl/cu132"),
    ({"https://download.pytorch.org/whl": "http://u:${LK_TEST_TOKEN}@127.0.0.1:9/pt"},
     "the mirror http://***@127.0.0.1:9/pt/cu132 (for the PyTorch index "
     "https://download.pytorch.org/whl/cu132)"),
])
def test_an_answer_is_told_as_from_the_host_that_gave_it(monkeypatch, mirrors, said):
    """Issue 42: a mirror's 404 named the official URL alone. The mirror that answers is
    named, with the official URL it stands for, its credentials masked."""
    from lockkit.index.urls import Indexes
    from lockkit.platforms.definitions import load_platforms

    monkeypatch.setenv("LK_TEST_TOKEN", "s3cret-token")
    indexes = Indexes.for_platform(load_platforms()["linux-cu132"], mirrors, None,
                                   secrets_of(mirrors.values()))
    assert indexes.torch_answering == said
