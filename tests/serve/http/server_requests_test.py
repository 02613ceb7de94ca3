#!/usr/bin/env python3
"""`padless serve` driven by the Python `requests` package, the way a TEI client would use it.

Starts the real binary on a free port over the tiny test model, checks every route, the error
statuses and bodies, keep-alive through one requests.Session, and the SIGTERM drain (exit 0).
Exits 77 (ctest's SKIP_RETURN_CODE) when `requests` is not importable, so the suite still runs
without it; the C++ test (server_test.cc) covers the same ground with cpp-httplib's client.

  server_requests_test.py --padless PATH --make-model PATH
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


def start_server(padless, model, log):
    proc = subprocess.Popen(
        [padless, 'serve', '--model', model, '--port', '0', '--device', 'cpu',
         '--max-client-batch-size', '4', '--body-limit', '65536', '--log-level', 'info'],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(log.name, encoding='utf-8', errors='replace') as f:
            m = re.search(r'ready on http://([^ :]+):(\d+) ', f.read())
        if m:
            return proc, f'http://{m.group(1)}:{m.group(2)}'
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError('padless serve did not start:\n' + open(log.name).read())


def check_ranked(ranked, probabilities=True):
    assert isinstance(ranked, list) and len(ranked) == 3, ranked
    assert sorted(p['label'] for p in ranked) == ['neg', 'neutral', 'pos'], ranked
    scores = [p['score'] for p in ranked]
    assert scores == sorted(scores, reverse=True), ranked
    if probabilities:
        assert abs(sum(scores) - 1) < 1e-4, ranked


def check_routes(requests, s, url):
    assert s.get(url + '/health').status_code == 200
    info = s.get(url + '/info').json()
    assert info['model_type']['classifier']['id2label']['0'] == 'neg', info
    assert info['max_client_batch_size'] == 4, info
    assert '/predict' in s.get(url + '/openapi.json').json()['paths']
    check_ranked(s.post(url + '/predict', json={'inputs': 'good film'}).json())
    check_ranked(s.post(url + '/', json={'inputs': 'good film'}).json())
    check_ranked(s.post(url + '/predict', json={'inputs': ['good', 'bad plot']}).json())
    batch = s.post(url + '/predict', json={'inputs': [['good'], ['a', 'b']]}).json()
    assert len(batch) == 2, batch
    for ranked in batch:
        check_ranked(ranked)
    check_ranked(s.post(url + '/predict', json={'inputs': 'x', 'raw_scores': True}).json(),
                 probabilities=False)
    metrics = s.get(url + '/metrics').text
    assert 'padless_http_requests_total{route="/predict",status="200"}' in metrics, metrics


def check_errors(requests, s, url):
    def status(method, path, **kw):
        r = s.request(method, url + path, **kw)
        if r.status_code >= 400:
            body = r.json()
            assert set(body) >= {'error', 'error_type'}, body
        return r.status_code
    assert status('POST', '/predict', data='{oops', headers={'Content-Type': 'application/json'}) == 400
    assert status('POST', '/predict', data=b'\xff\xfe', headers={'Content-Type': 'application/json'}) == 400
    assert status('POST', '/predict', json={'inputs': 5}) == 422
    assert status('POST', '/predict', json={'inputs': ['a', 'b', 'c']}) == 422
    # An empty text is TEI's 400 Empty; a body that is not JSON by its Content-Type 415.
    for inputs in ('', ['a', ''], [['a'], ['']], [['a'], ['', 'b']]):
        assert status('POST', '/predict', json={'inputs': inputs}) == 400, inputs
    body = '{"inputs": "good film"}'
    assert status('POST', '/predict', data=body, headers={'Content-Type': 'text/plain'}) == 415
    assert status('POST', '/', data=body, headers={'Content-Type': 'text/plain'}) == 415
    assert status('POST', '/predict', data={'inputs': 'good film'}) == 415  # form-encoded
    assert status('POST', '/predict', data=body) == 415  # a str body: requests sends no type
    assert status('POST', '/predict', data=body,
                  headers={'Content-Type': 'application/json; charset=utf-8'}) == 200
    # TEI >= 1.9: too many inputs and a text too long with truncate false are 422 Validation; 413
    # only for a body over the limit.
    assert status('POST', '/predict', json={'inputs': [['a']] * 5}) == 422
    assert status('POST', '/predict', json={'inputs': 'a' * 70000}) == 413
    assert status('POST', '/predict', json={'inputs': 'good ' * 200, 'truncate': False}) == 422
    assert status('GET', '/nothing') == 404
    assert status('GET', '/predict') == 405
    assert status('DELETE', '/info') == 405


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--padless', required=True)
    parser.add_argument('--make-model', required=True)
    args = parser.parse_args()
    try:
        import requests
    except ImportError:
        print('server_requests_test: skipped (the requests package is not installed)')
        return SKIP
    model = subprocess.run([args.make_model], check=True, capture_output=True,
                           text=True).stdout.strip()
    with tempfile.NamedTemporaryFile('w', suffix='.log', delete=False) as log:
        proc, url = start_server(args.padless, model, log)
    try:
        with requests.Session() as s:  # one keep-alive connection for all
            check_routes(requests, s, url)
            check_errors(requests, s, url)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=20)
        assert rc == 0, f'exit {rc}\n' + open(log.name).read()
    except BaseException:
        print(open(log.name).read(), file=sys.stderr)
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
        os.unlink(log.name)
    print('server_requests_test: every route, error status and the SIGTERM drain checked')
    return 0


if __name__ == '__main__':
    sys.exit(main())
