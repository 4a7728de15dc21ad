#!/usr/bin/env python3
"""A page of another origin tries the preview's controls in Debian's headless Chromium (tests use it).

    scripts/preview-cross-origin.py PAGE_URL

PAGE_URL is the preview's address with its token (the `preview:` line). Chromium opens it
first, as the user would (the preview sets its cookie; the picture shows), then opens a page
this script serves from another port of 127.0.0.1 — the same site, so the browser sends the
preview's SameSite=Strict cookie with its requests. That page tries every control with
`fetch(..., {method: 'POST', mode: 'no-cors', credentials: 'include'})` (no preflight: ratio,
record, shutter, zoom, exposure, effect, mode, the primary and secondary presses), reads the status
and the gallery with `fetch`, sends a form POST into a hidden frame, embeds the snapshot, the
stream, the latest photo and a gallery thumbnail as images, a clip as a video, and opens the
event stream. Prints one JSON object:
`pictureShown` (the preview's own page worked), `attempts` (what the other page sent, each
once it was sent), `attackerOrigin`. Exit 0, or 1 with the reason on stderr. The test checks
on the preview's side that each attempt arrived (its 403 count) and changed nothing.
"""
import http.server
import json
import sys
import threading
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

ATTACK = """<!doctype html><html><head><meta charset="utf-8"><title>attacking</title></head><body>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="post" target="sink" action="TARGET/ratio?to=1x1"><input name="x" value="1"></form>
<script>
const t = 'TARGET', attempts = [];
async function go() {
  for (const path of ['/ratio?to=9x16', '/record?action=stop', '/record?action=toggle', '/shutter',
                      '/control?name=zoom&value=2', '/control?name=exposure&value=1.5', '/control?name=effect&value=grayscale', '/control?name=mode&value=video',
                      '/press?button=click&action=primary', '/press?button=click&action=secondary']) {
    try { await fetch(t + path, {method: 'POST', mode: 'no-cors', credentials: 'include'}); attempts.push('fetch POST ' + path); }
    catch (e) { attempts.push('fetch POST ' + path + ' failed: ' + e); }
  }
  for (const path of ['/status', '/gallery']) {
    try { await fetch(t + path, {mode: 'no-cors', credentials: 'include'}); attempts.push('fetch GET ' + path); }
    catch (e) { attempts.push('fetch GET ' + path + ' failed: ' + e); }
  }
  await new Promise(done => {
    const frame = document.querySelector('iframe');
    frame.onload = () => { attempts.push('form POST /ratio?to=1x1'); done(); };
    document.getElementById('f').submit();
  });
  await new Promise(done => {
    const img = new Image();
    img.onload = () => { attempts.push('img /snapshot.jpg loaded'); done(); };
    img.onerror = () => { attempts.push('img /snapshot.jpg'); done(); };
    img.src = t + '/snapshot.jpg';
  });
  for (const path of ['/stream.mjpg', '/photo.jpg', '/gallery/clip-1.jpg']) {
    await new Promise(done => {
      const img = new Image();
      img.onload = () => { attempts.push('img ' + path + ' loaded'); done(); };
      img.onerror = () => { attempts.push('img ' + path); done(); };
      img.src = t + path;
    });
  }
  await new Promise(done => {
    const video = document.createElement('video');
    video.onloadeddata = () => { attempts.push('video /media/clip-1 loaded'); done(); };
    video.onerror = () => { attempts.push('video /media/clip-1'); done(); };
    video.src = t + '/media/clip-1';
  });
  await new Promise(done => {
    const events = new EventSource(t + '/events', {withCredentials: true});
    events.onmessage = () => { events.close(); attempts.push('EventSource /events opened'); done(); };
    events.onerror = () => { events.close(); attempts.push('EventSource /events'); done(); };
  });
  window.attempts = attempts;
  document.title = 'done';
}
go();
</script></body></html>"""


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    page_url = argv[1]
    target = "{0.scheme}://{0.netloc}".format(urlsplit(page_url))
    body = ATTACK.replace("TARGET", target).encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    attacker = f"http://127.0.0.1:{server.server_address[1]}"
    result = {"attackerOrigin": attacker}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page()
                page.goto(page_url)
                page.wait_for_function("() => document.getElementById('p').naturalWidth > 0", timeout=30000)
                result["pictureShown"] = True
                result["addressAfter"] = page.url
                page.goto(attacker + "/")
                page.wait_for_function("() => document.title === 'done'", timeout=60000)
                result["attempts"] = page.evaluate("() => window.attempts")
            finally:
                browser.close()
    except Exception as e:  # noqa: BLE001 - the reason goes to the test
        print(f"preview-cross-origin: {e}", file=sys.stderr)
        return 1
    finally:
        server.shutdown()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
