// gpuq's web view: polls /api/v1/... (a queue's whole pending list: the
// visibility API, /apis/visibility.gpuq.dev/...) once a second and redraws.
// No framework, no inline script or style (Content-Security-Policy
// default-src 'self'). Every number a test reads carries data-k="...".
'use strict';
(function () {
  var POLL_MS = 1000;
  var firstRender = 0;
  var timer = 0;
  var seq = 0;

  function token() { return sessionStorage.getItem('gpuq-token') || ''; }

  // "#token=T&/cq/x": keep T in this tab only, then drop it from the URL.
  function takeToken() {
    var h = location.hash;
    if (h.indexOf('#token=') !== 0) return;
    var rest = h.slice(7), amp = rest.indexOf('&');
    var tok = amp < 0 ? rest : rest.slice(0, amp);
    sessionStorage.setItem('gpuq-token', decodeURIComponent(tok));
    history.replaceState(null, '', '#' + (amp < 0 ? '/' : rest.slice(amp + 1)));
  }

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function td(v, key, cls) {
    var a = {text: v === null || v === undefined ? '-' : String(v)};
    if (key) a['data-k'] = key;
    if (cls) a.cls = cls;
    return el('td', a);
  }
  function link(text, href) { return el('a', {href: href, text: text}); }
  function table(head, rows) {
    return el('table', {}, [el('thead', {}, [el('tr', {}, head.map(function (h) {
      return el('th', {text: h});
    }))]), el('tbody', {}, rows)]);
  }
  function age(nowMs, ms) {
    if (ms === undefined || ms < 0) return '-';
    var s = Math.max(0, Math.round((nowMs - ms) / 1000));
    if (s < 120) return s + 's';
    if (s < 7200) return Math.round(s / 60) + 'm';
    return Math.round(s / 3600) + 'h';
  }
  function status(text, err) {
    var s = document.getElementById('status');
    s.textContent = text;
    s.className = err ? 'status err' : 'status';
  }

  function quotaRows(cq, prefix) {
    return cq.quota.map(function (q) {
      var k = prefix + cq.name + '/' + q.flavor + '/' + q.resource + '/';
      return el('tr', {}, [
        td(cq.name === undefined ? '' : cq.name), td(q.flavor), td(q.resource),
        td(q.nominal, k + 'nominal', 'n'), td(q.borrowingLimit, null, 'n'),
        td(q.used, k + 'used', 'n'), td(q.borrowed, k + 'borrowed', q.borrowed !== '0' ? 'n over' : 'n'),
        td(q.lent, k + 'lent', 'n')]);
    });
  }

  // GPU-hours and cost per namespace over the API's usage window (the
  // ledger's rows, as `gpuq report usage`): accelerator rows only.
  function usageSection(u, withNs) {
    var days = Math.round(u.windowMs / 86400000);
    var rows = u.rows.filter(function (r) { return r.accelerator; });
    var head = ['resource', 'nominal GPU-hours', 'borrowed GPU-hours', 'cost'];
    var out = [el('h2', {text: 'GPU-hours (' + days + ' days)'}),
      el('p', {cls: 'muted', text: 'from ' + new Date(u.fromMs).toISOString().slice(0, 16).replace('T', ' ') +
        ' to ' + new Date(u.toMs).toISOString().slice(0, 16).replace('T', ' ') +
        ' UTC; cost at the ResourceFlavors\' gpuq.dev/price-per-hour'})];
    if (withNs) head.unshift('namespace');
    out.push(table(head, rows.map(function (r) {
      var k = 'usage/' + r.namespace + '/' + r.resource + '/';
      var tds = [td(r.resource), td(r.nominalHours.toFixed(3), k + 'nominal', 'n'),
        td(r.borrowedHours.toFixed(3), k + 'borrowed', 'n'), td(r.cost.toFixed(2), k + 'cost', 'n')];
      if (withNs) tds.unshift(el('td', {}, [link(r.namespace, '#/ns/' + r.namespace)]));
      return el('tr', {'data-k': 'usage/' + r.namespace + '/' + r.resource}, tds);
    })));
    if (!rows.length) out.push(el('p', {cls: 'muted', text: 'no GPU held in this window'}));
    return out;
  }

  // Budgets (docs/economics.md): GPU-hours or cost used in the window against
  // the limit, the state of the last evaluation, and the action over it.
  function budgetSection(bs) {
    if (!bs || !bs.length) return [];
    return [el('h2', {text: 'Budgets'}), table(['scope', 'name', 'used', 'limit', 'state',
      'action', 'window ends (UTC)'], bs.map(function (b) {
      var k = 'budget/' + b.scope + '/' + b.name + '/';
      return el('tr', {'data-k': 'budget/' + b.scope + '/' + b.name}, [td(b.scope), td(b.name),
        td(b.used.toFixed(2) + ' ' + b.unit, k + 'used', 'n'), td(b.limit.toFixed(2), null, 'n'),
        td(b.state, k + 'state', b.state === 'Over' ? 'over' : ''), td(b.action),
        td(b.windowEndMs ? new Date(b.windowEndMs).toISOString().slice(0, 16).replace('T', ' ') : '-')]);
    }))];
  }

  // When a pending workload is expected to start (predict/), or '-'.
  function expected(nowMs, w) {
    if (w.expectedStartMs === undefined) return '-';
    return w.expectedStartMs <= nowMs ? 'next cycle' : 'in ' + age(w.expectedStartMs, nowMs);
  }

  function clusterView(d) {
    var main = [el('h1', {text: 'Cluster'})];
    var cohortOf = {};
    d.cohorts.forEach(function (c) {
      c.clusterQueues.forEach(function (n) { cohortOf[n] = c.name; });
    });
    main.push(el('h2', {text: 'ClusterQueues'}));
    main.push(table(['ClusterQueue', 'cohort', 'pending', 'admitted', 'admissions',
      'preemptions', 'evictions', 'weighted share'], d.clusterQueues.map(function (cq) {
      var k = 'cq/' + cq.name + '/';
      return el('tr', {}, [el('td', {}, [link(cq.name, '#/cq/' + cq.name)]),
        td(cq.cohort || '-'), td(cq.pending, k + 'pending', 'n'),
        td(cq.admitted, k + 'admitted', 'n'), td(cq.admissions, k + 'admissions', 'n'),
        td(cq.preemptions, k + 'preemptions', 'n'), td(cq.evictions, k + 'evictions', 'n'),
        td(cq.weightedShare.toFixed(3), null, 'n')]);
    })));
    main.push(el('h2', {text: 'Quota per flavor and resource'}));
    var rows = [];
    d.clusterQueues.forEach(function (cq) { rows = rows.concat(quotaRows(cq, 'q/')); });
    main.push(table(['ClusterQueue', 'flavor', 'resource', 'nominal', 'borrowing limit',
      'used', 'borrowed', 'lent'], rows));
    if (d.cohorts.length) {
      main.push(el('h2', {text: 'Cohorts'}));
      main.push(table(['cohort', 'ClusterQueues'], d.cohorts.map(function (c) {
        return el('tr', {}, [td(c.name), td(c.clusterQueues.join(', '))]);
      })));
    }
    if (d.usage) main = main.concat(usageSection(d.usage, true));
    main = main.concat(budgetSection(d.budgets));
    return main;
  }

  function wlName(w) { return w.namespace + '/' + w.name; }

  function cqView(d) {
    var main = [el('h1', {text: 'ClusterQueue ' + d.name}),
      el('p', {}, [el('span', {text: 'cohort ' + (d.cohort || '-') + ' \u00b7 pending '}),
        el('b', {'data-k': 'cq/' + d.name + '/pending', text: String(d.pending)}),
        el('span', {text: ' \u00b7 admitted '}),
        el('b', {'data-k': 'cq/' + d.name + '/admitted', text: String(d.admitted)}),
        el('span', {text: ' \u00b7 weight ' + d.weight + ' \u00b7 weighted share ' +
          d.weightedShare.toFixed(3)})])];
    main.push(table(['ClusterQueue', 'flavor', 'resource', 'nominal', 'borrowing limit',
      'used', 'borrowed', 'lent'], quotaRows(d, 'q/')));
    main.push(el('h2', {text: 'LocalQueues'}));
    main.push(table(['LocalQueue', 'pending', 'admitted', 'weight', 'decayed usage', 'usage'],
      d.localQueues.map(function (l) {
        var k = 'lq/' + l.namespace + '/' + l.name + '/';
        return el('tr', {}, [el('td', {}, [link(l.namespace + '/' + l.name, '#/ns/' + l.namespace)]),
          td(l.pending, k + 'pending', 'n'), td(l.admitted, k + 'admitted', 'n'),
          td(l.weight, null, 'n'), td(l.decayedUsage.toFixed(2), null, 'n'),
          td(l.usage.filter(function (u) { return u.used !== '0'; }).map(function (u) {
            return u.used + ' ' + u.resource + ' on ' + u.flavor;
          }).join(', ') || '-')]);
      })));
    var p = d.pendingWorkloads, a = d.admittedWorkloads;
    main.push(el('h2', {}, [el('span', {text: 'Pending, in admission order (' + p.items.length +
      ' of ' + p.total + ') \u00b7 '}), link('all of them', '#/pending/' + d.name)]));
    main.push(table(['#', 'workload', 'priority', 'requests', 'expected start', 'reason', 'why'],
      p.items.map(function (w) {
        return el('tr', {'data-k': 'pending/' + wlName(w)}, [td(w.position, 'pos/' + wlName(w), 'n'),
          td(wlName(w)), td(w.priority, null, 'n'), td(w.requests),
          td(expected(d.nowMs, w), 'expected/' + wlName(w)),
          td(w.reason, 'reason/' + wlName(w)), td(w.message, null, 'msg')]);
      })));
    main.push(el('h2', {text: 'Admitted (' + a.items.length + ' of ' + a.total + ')'}));
    main.push(table(['workload', 'priority', 'requests', 'flavors', 'age', 'state'],
      a.items.map(function (w) {
        return el('tr', {'data-k': 'admitted/' + wlName(w)}, [td(wlName(w)),
          td(w.priority, null, 'n'), td(w.requests), td(w.flavors, 'flavor/' + wlName(w)),
          td(age(d.nowMs, w.admittedMs), null, 'n'),
          td(w.state + (w.idleSinceMs !== undefined ? ', GPUs idle ' + age(d.nowMs, w.idleSinceMs) : ''),
            'idle/' + wlName(w))]);
      })));
    return main;
  }

  function eventRows(evs) {
    return evs.map(function (e) {
      var by = e.preemptor ? (e.preemptor.name ? e.preemptor.namespace + '/' + e.preemptor.name :
        'a workload') + ' of ' + e.preemptor.clusterQueue : '';
      return el('tr', {'data-k': 'event/' + e.kind + '/' + e.namespace + '/' + e.name}, [
        td(new Date(e.timeMs).toISOString().slice(11, 19)), td(e.kind),
        td(e.namespace + '/' + e.name), td(e.clusterQueue),
        td(e.kind === 'Admitted' ? 'on ' + e.flavors : e.reason), td(by)]);
    });
  }
  var EVENT_HEAD = ['time (UTC)', 'what', 'workload', 'ClusterQueue', 'detail', 'preempted by'];

  function nsView(d) {
    var main = [el('h1', {text: 'Namespace ' + d.namespace})];
    main.push(table(['LocalQueue', 'ClusterQueue', 'pending', 'admitted', 'usage'],
      d.localQueues.map(function (l) {
        var k = 'lq/' + l.namespace + '/' + l.name + '/';
        return el('tr', {}, [el('td', {}, [link(l.name, '#/lq/' + l.namespace + '/' + l.name)]),
          td(l.clusterQueue), td(l.pending, k + 'pending', 'n'),
          td(l.admitted, k + 'admitted', 'n'),
          td(l.usage.map(function (u) { return u.used + ' ' + u.resource + ' on ' + u.flavor; }).join(', '),
            k + 'usage')]);
      })));
    var w = d.workloads;
    main.push(el('h2', {text: 'Workloads (' + w.items.length + ' of ' + w.total + ')'}));
    main.push(table(['workload', 'state', 'position', 'priority', 'requests', 'flavors / why', 'age'],
      w.items.map(function (x) {
        return el('tr', {'data-k': 'wl/' + wlName(x)}, [td(x.name), td(x.state, 'state/' + wlName(x)),
          td(x.position, null, 'n'), td(x.priority, null, 'n'), td(x.requests),
          td(x.state === 'Pending' ? x.reason + (x.expectedStartMs !== undefined ? ' (expected to start ' +
            expected(d.nowMs, x) + ')' : '') + ': ' + x.message : x.flavors, null, 'msg'),
          td(age(d.nowMs, x.state === 'Pending' ? x.createdMs : x.admittedMs), null, 'n')]);
      })));
    if (d.usage) main = main.concat(usageSection(d.usage, false));
    main = main.concat(budgetSection(d.budgets));
    main.push(el('h2', {text: 'Recent events'}));
    main.push(table(EVENT_HEAD, eventRows(d.events)));
    return main;
  }

  // Pending work on demand: gpuq's visibility API (docs/visibility.md), the
  // whole list of a ClusterQueue or a LocalQueue a page at a time.
  var VIS = '/apis/visibility.gpuq.dev/v1beta1/', PAGE = 100;
  function pendingView(d, r) {
    var from = r.offset + 1, to = r.offset + d.items.length;
    var main = [el('h1', {text: 'Pending in ' + r.title}),
      el('p', {}, [el('span', {text: (d.items.length ? from + '-' + to : 'none') + ' of '}),
        el('b', {'data-k': 'vtotal', text: String(d.total)}),
        el('span', {text: ', in admission order, from gpuq\'s visibility API (' + r.url + ')'})])];
    main.push(table(['in ClusterQueue', 'in LocalQueue', 'workload', 'priority', 'LocalQueue',
      'ClusterQueue', 'reason', 'why'], d.items.map(function (w) {
      var n = w.metadata.namespace + '/' + w.metadata.name;
      return el('tr', {'data-k': 'vrow/' + n}, [td(w.positionInClusterQueue, 'vpos/' + n, 'n'),
        td(w.positionInLocalQueue, 'vlq/' + n, 'n'), td(n), td(w.priority, null, 'n'),
        el('td', {}, [link(w.localQueueName, '#/lq/' + w.metadata.namespace + '/' + w.localQueueName)]),
        td(w.clusterQueueName), td(w.reason, 'vreason/' + n), td(w.message, null, 'msg')]);
    })));
    var nav = [];
    if (r.offset > 0) nav.push(link('previous ' + PAGE, r.base + '/' + Math.max(0, r.offset - PAGE)));
    if (to < d.total) nav.push(link('next ' + PAGE, r.base + '/' + to));
    if (nav.length) main.push(el('p', {}, nav));
    return main;
  }

  function eventsView(d) {
    return [el('h1', {text: 'Recent admissions, preemptions and evictions'}),
      table(EVENT_HEAD, eventRows(d.events))];
  }

  function vis(base, path, title, offset) {
    var off = Number(offset || 0);
    return {url: VIS + path + '/pendingworkloads?limit=' + PAGE + '&offset=' + off, base: base,
      title: title, offset: off, view: pendingView};
  }

  function route() {
    var h = location.hash.replace(/^#/, '') || '/';
    var m;
    if ((m = h.match(/^\/cq\/([a-z0-9.-]+)$/))) return {api: 'clusterqueues/' + m[1], view: cqView};
    if ((m = h.match(/^\/ns\/([a-z0-9-]+)$/))) return {api: 'namespaces/' + m[1], view: nsView};
    if ((m = h.match(/^\/pending\/([a-z0-9.-]+)(?:\/([0-9]+))?$/)))
      return vis('#/pending/' + m[1], 'clusterqueues/' + m[1], 'ClusterQueue ' + m[1], m[2]);
    if ((m = h.match(/^\/lq\/([a-z0-9-]+)\/([a-z0-9.-]+)(?:\/([0-9]+))?$/)))
      return vis('#/lq/' + m[1] + '/' + m[2], 'namespaces/' + m[1] + '/localqueues/' + m[2],
        'LocalQueue ' + m[1] + '/' + m[2], m[3]);
    if (h === '/events') return {api: 'events', view: eventsView};
    return {api: 'cluster', view: clusterView};
  }

  function render(r, d) {
    var main = document.getElementById('main');
    var kids = r.view(d, r);
    main.replaceChildren.apply(main, kids);
    if (d.nowMs) document.body.setAttribute('data-now-ms', String(d.nowMs));
    if (!firstRender) {
      firstRender = performance.now(); // since the navigation started
      document.body.setAttribute('data-first-render-ms', firstRender.toFixed(0));
    }
  }

  function poll() {
    var r = route(), my = ++seq;
    var headers = {};
    clearTimeout(timer);
    if (token()) headers.Authorization = 'Bearer ' + token();
    fetch(r.url || '/api/v1/' + r.api, {headers: headers, cache: 'no-store'}).then(function (resp) {
      return resp.json().then(function (d) { return {code: resp.status, d: d}; });
    }).then(function (x) {
      if (my !== seq) return;
      document.getElementById('login').hidden = x.code !== 401;
      if (x.code === 200) {
        render(r, x.d);
        status('updated ' + new Date(x.d.nowMs || Date.now()).toISOString().slice(11, 19) + ' UTC');
      } else {
        status(x.d.message || ('HTTP ' + x.code), true);
        if (x.code === 403 && r.api === 'cluster')
          document.getElementById('main').replaceChildren(el('p', {text:
            'This token may not read the whole cluster: open a namespace where it may list Jobs.'}));
      }
    }).catch(function (e) {
      if (my === seq) status('cannot reach gpuq: ' + e, true);
    }).then(function () {
      if (my === seq) timer = setTimeout(poll, POLL_MS);
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    takeToken();
    document.getElementById('tokenform').addEventListener('submit', function (ev) {
      ev.preventDefault();
      sessionStorage.setItem('gpuq-token', document.getElementById('token').value.trim());
      poll();
    });
    document.getElementById('nsform').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var ns = document.getElementById('nsinput').value.trim();
      if (ns) location.hash = '#/ns/' + ns;
    });
    window.addEventListener('hashchange', function () { takeToken(); poll(); });
    poll();
  });
})();
