// The etl-craft console's own script (no library): times in the viewer's
// time zone, pages kept live by the server's event stream, an attempt's log
// followed as it is written, and the "/" key to search. Every page works
// without it, only not live. Text from the server is only ever set as text.
(function () {
  'use strict';
  var root = document.documentElement;

  // Times: each <time datetime> shows the viewer's local time; its title
  // keeps the UTC time the server wrote.
  var clock = new Intl.DateTimeFormat(undefined, {
    year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short'
  });
  function localTimes(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll('time[datetime]'), function (t) {
      var d = new Date(t.getAttribute('datetime'));
      if (!isNaN(d.getTime())) { t.textContent = clock.format(d); }
    });
  }

  // Live pages: the server says which tables changed; a page watching one
  // of them fetches itself and swaps each live part that differs, keeping
  // the focus and the open details.
  var watch = (root.getAttribute('data-watch') || '').split(/\s+/).filter(Boolean);
  var version = root.getAttribute('data-version');
  var fetching = false;
  var again = false;
  var live = document.getElementById('live');

  function showState(state, text) {
    if (live && live.getAttribute('data-state') !== state) {
      live.setAttribute('data-state', state);
      live.textContent = 'Live updates: ' + text;
    }
  }

  function toSignin(url) {
    location.assign(url || '/signin?next=' + encodeURIComponent(location.pathname + location.search));
  }

  function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    fetch(location.href, { credentials: 'same-origin', cache: 'no-store', headers: { 'X-Console-Live': '1' } })
      .then(function (res) {
        if (res.redirected && new URL(res.url).pathname === '/signin') { toSignin(res.url); return null; }
        return res.ok ? res.text() : null;
      })
      .then(function (html) { if (html) { swap(html); } })
      .catch(function () { /* the stream says when the server is back */ })
      .then(function () {
        fetching = false;
        if (again) { again = false; refresh(); }
      });
  }

  // focusKey names the focused element so that its twin in the new part
  // can take the focus.
  function focusKey(el) {
    return { id: el.id, tag: el.tagName, href: el.getAttribute('href'), name: el.getAttribute('name') };
  }
  function refocus(scope, key) {
    var el = null;
    if (key.id) { el = document.getElementById(key.id); }
    if (!el && key.href) { el = scope.querySelector(key.tag + '[href="' + CSS.escape(key.href) + '"]'); }
    if (!el && key.name) { el = scope.querySelector(key.tag + '[name="' + CSS.escape(key.name) + '"]'); }
    if (el) { el.focus({ preventScroll: true }); }
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, 'text/html');
    localTimes(doc);
    var v = doc.documentElement.getAttribute('data-version');
    if (v) { version = v; root.setAttribute('data-version', v); }
    Array.prototype.forEach.call(document.querySelectorAll('[data-live][id]'), function (old) {
      var fresh = doc.getElementById(old.id);
      if (!fresh) { return; }
      var openBefore = old.querySelectorAll('details');
      var openAfter = fresh.querySelectorAll('details');
      for (var i = 0; i < openBefore.length && i < openAfter.length; i++) {
        openAfter[i].open = openBefore[i].open;
      }
      if (fresh.innerHTML === old.innerHTML) { return; }
      var active = document.activeElement;
      var key = active && old.contains(active) ? focusKey(active) : null;
      old.replaceChildren.apply(old, Array.prototype.map.call(fresh.childNodes, function (n) {
        return document.importNode(n, true);
      }));
      if (key) { refocus(old, key); }
    });
  }

  function connect() {
    var stream = new EventSource('/events');
    stream.addEventListener('hello', function (e) {
      showState('on', 'on');
      if (JSON.parse(e.data).version !== version) { refresh(); }
    });
    stream.addEventListener('change', function (e) {
      var c = JSON.parse(e.data);
      if (c.tables.some(function (t) { return watch.indexOf(t) >= 0; })) {
        refresh();
      } else {
        version = c.version;
      }
    });
    stream.addEventListener('signout', function () { stream.close(); toSignin(); });
    stream.onerror = function () {
      showState('off', 'reconnecting…');
      if (stream.readyState === EventSource.CLOSED) {
        // Refused for good (the session ended, or the server answered
        // otherwise): the page's own fetch finds out which.
        refresh();
        setTimeout(connect, 2000);
      }
    };
  }

  // An attempt's log, followed while the attempt may write: what was
  // written since the last read is added as text.
  var maxLogChars = 2000000;
  function follow(pre) {
    var src = pre.getAttribute('data-src');
    var offset = Number(pre.getAttribute('data-offset')) || 0;
    var note = document.getElementById('follow');
    function step() {
      fetch(src + '?offset=' + offset, { credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (res.redirected && new URL(res.url).pathname === '/signin') { toSignin(res.url); return; }
          if (!res.ok) { setTimeout(step, 2000); return; }
          var next = Number(res.headers.get('X-Next-Offset'));
          var active = res.headers.get('X-Attempt-Active') === 'true';
          return res.text().then(function (text) {
            if (text) {
              var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
              pre.appendChild(document.createTextNode(text));
              if (pre.textContent.length > maxLogChars) {
                pre.textContent = pre.textContent.slice(-maxLogChars / 2);
              }
              if (atEnd) { pre.scrollTop = pre.scrollHeight; }
            }
            offset = next;
            if (active || text) {
              setTimeout(step, text ? 250 : 1000);
            } else if (note) {
              note.hidden = true;
            }
          });
        })
        .catch(function () { setTimeout(step, 2000); });
    }
    step();
  }

  document.addEventListener('keydown', function (e) {
    var tag = document.activeElement ? document.activeElement.tagName : '';
    if (e.key === '/' && !e.ctrlKey && !e.metaKey && !e.altKey && !/^(INPUT|TEXTAREA|SELECT)$/.test(tag)) {
      var box = document.getElementById('q');
      if (box) { e.preventDefault(); box.focus(); }
    }
  });

  localTimes(document);
  if (watch.length) { connect(); }
  var log = document.getElementById('log');
  if (log && log.getAttribute('data-active') === 'true') { follow(log); }
}());
