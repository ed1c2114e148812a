import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { AppError } from '../../src/core/errors.ts';
import { loadScaled } from '../support/load-scaled.ts';
import {
  checkOutboundUrl,
  createGuardedDispatcher,
  guardedFetch,
  isPublicAddress,
  threadPoolSize,
  type OutboundLookup,
} from '../../src/net/url-guard.ts';

// Everything here stays on loopback: hostnames go through fake resolvers, and public literals are only
// checked, never connected to.

/** A resolver serving a fixed table; unknown names fail like ENOTFOUND. */
function fakeLookup(table: Record<string, string[]>): OutboundLookup {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const noDns: OutboundLookup = async (hostname) => {
  throw new Error(`unexpected DNS lookup of ${hostname}`);
};

function isCode(code: string) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  };
}

let server: Server;
let base: string;
let hits = 0;

before(async () => {
  server = createServer((req, res) => {
    hits++;
    const url = new URL(req.url ?? '/', 'http://x');
    const redirect = (location: string, status = 302): void => {
      res.writeHead(status, { location }).end();
    };
    switch (url.pathname) {
      case '/hello':
        res.writeHead(200, { 'content-type': 'text/plain', 'x-multi': ['a', 'b'] }).end('hello');
        return;
      case '/echo':
        res.end(JSON.stringify({ method: req.method, authorization: req.headers.authorization ?? null }));
        return;
      case '/to-ftp':
        return redirect('ftp://127.0.0.1/file');
      case '/to-file':
        return redirect('file:///etc/passwd');
      case '/to-metadata':
        return redirect('http://169.254.169.254/latest/meta-data/');
      case '/to-hello':
        return redirect('hello'); // relative Location, resolved against the current URL
      case '/see-other':
        return redirect('/echo', 303);
      case '/loop':
        return redirect('/loop');
      case '/chain': {
        const n = Number(url.searchParams.get('n'));
        return n > 0 ? redirect(`/chain?n=${n - 1}`) : void res.end('end of chain');
      }
      case '/big':
        // Chunked, no content-length: the size bound must hold while streaming.
        res.writeHead(200);
        for (let i = 0; i < 64; i++) res.write(Buffer.alloc(16 * 1024, 0x61));
        res.end();
        return;
      case '/slow':
        return; // never answers
      default:
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

test('the WHATWG URL parser normalises every IPv4 spelling to dotted decimal', () => {
  const cases: Record<string, string> = {
    'http://2130706433/': '127.0.0.1',
    'http://0177.0.0.1/': '127.0.0.1',
    'http://0x7f.0.0.1/': '127.0.0.1',
    'http://0x7f000001/': '127.0.0.1',
    'http://127.1/': '127.0.0.1',
    'http://10.1/': '10.0.0.1',
    'http://127.0.0.1./': '127.0.0.1',
    'http://[::ffff:127.0.0.1]/': '[::ffff:7f00:1]',
    'http://[0:0:0:0:0:ffff:7f00:1]/': '[::ffff:7f00:1]',
  };
  for (const [input, hostname] of Object.entries(cases)) assert.equal(new URL(input).hostname, hostname, input);
});

test('loopback, private and metadata IP literals are refused in every spelling', async () => {
  const urls = [
    'http://127.0.0.1/', 'http://2130706433/', 'http://0177.0.0.1/', 'http://0x7f.0.0.1/', 'http://0x7f000001/',
    'http://127.1/', 'http://10.1/', 'http://127.0.0.1./', 'https://10.0.0.5:8443/x', 'http://172.16.0.1/',
    'http://192.168.1.1/', 'http://169.254.169.254/latest/meta-data/', 'http://100.64.0.1/', 'http://0.0.0.0/',
    'http://255.255.255.255/', 'http://224.0.0.1/', 'http://240.0.0.1/', 'http://198.18.0.1/',
    'http://192.0.2.1/', 'http://[::1]/', 'http://[::]/', 'http://[::ffff:127.0.0.1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/', 'http://[::ffff:7f00:1]/', 'http://[::127.0.0.1]/', 'http://[::8.8.8.8]/',
    'http://[fc00::1]/', 'http://[fd12:3456::1]/', 'http://[fe80::1]/', 'http://[ff02::1]/',
    'http://[64:ff9b::7f00:1]/', 'http://[64:ff9b::10.0.0.1]/', 'http://[2002:7f00:1::]/', 'http://[2002:a9fe:a9fe::1]/',
    'http://[2001:db8::1]/', 'http://[fd00:ec2::254]/',
    // Azure's WireServer: a public-looking address that only the platform answers, from inside every Azure VM.
    'http://168.63.129.16/machine?comp=goalstate', 'http://[::ffff:168.63.129.16]/',
  ];
  for (const url of urls) await assert.rejects(checkOutboundUrl(url, { lookup: noDns }), isCode('private_url_blocked'), url);
});

test('internal host names are refused before any DNS lookup', async () => {
  const urls = [
    'http://localhost/', 'http://LOCALHOST./', 'http://%6c%6fcalhost/', 'http://api.localhost/', 'http://metadata.google.internal/',
    'http://printer.local/', 'http://nas.home.arpa/', 'http://metadata/', 'http://redis:6379/', 'http://api.localhost.../', 'http://metadata.../',
  ];
  for (const url of urls) await assert.rejects(checkOutboundUrl(url, { lookup: noDns }), isCode('private_url_blocked'), url);
});

test('non-http schemes, credentials and malformed URLs are invalid requests', async () => {
  const urls = [
    'file:///etc/passwd', 'ftp://example.com/', 'gopher://example.com/', 'javascript:alert(1)', 'data:text/plain,hi',
    'http://user:pass@example.com/', 'http://user@example.com/', 'http://:pass@example.com/', 'http://@example.com/',
    'not a url', 'http://', 'http://exa mple.com/', 'http://127.0.0.1.1/',
  ];
  for (const url of urls) await assert.rejects(checkOutboundUrl(url, { lookup: noDns }), isCode('invalid_request'), url);
});

test('public IP literals are allowed without DNS', async () => {
  for (const [url, address] of [
    ['http://93.184.216.34/', '93.184.216.34'],
    ['https://[2606:4700::1111]/dns-query', '2606:4700::1111'],
    ['http://[::ffff:93.184.216.34]/', '::ffff:5db8:d822'],
  ] as const) {
    const checked = await checkOutboundUrl(url, { lookup: noDns });
    assert.deepEqual(checked.addresses, [address]);
    assert.equal(checked.url.href, new URL(url).href);
  }
});

test('isPublicAddress classifies addresses including IPv6 forms that embed an IPv4 address', () => {
  for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '2a00:1450:4001::1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
    assert.equal(isPublicAddress(ip), true, ip);
  }
  for (const ip of [
    '127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.127.255.255', '0.0.0.0',
    '255.255.255.255', '239.1.1.1', '::1', '::', '::ffff:10.0.0.1', '::ffff:7f00:1', '::7f00:1', 'fe80::1%eth0',
    '64:ff9b::a00:1', '2002:c0a8:101::', '2001::1', 'fc00::1', 'ff02::1', 'not-an-ip', '', '[::1]', '168.63.129.16',
    // Deprecated forms embedding a public IPv4 address are not public unicast either.
    '::808:808', '::ffff:0:808:808',
  ]) {
    assert.equal(isPublicAddress(ip), false, ip);
  }
  assert.equal(isPublicAddress('172.32.0.1'), true, 'just outside 172.16/12');
  assert.equal(isPublicAddress('100.128.0.1'), true, 'just outside 100.64/10');
});

test('a hostname resolving to one public and one private address is refused', async () => {
  const lookup = fakeLookup({ 'mixed.example.com': ['93.184.216.34', '10.0.0.7'], 'v6.example.com': ['2606:4700::1111', '::1'] });
  await assert.rejects(checkOutboundUrl('https://mixed.example.com/', { lookup }), isCode('private_url_blocked'));
  await assert.rejects(checkOutboundUrl('https://v6.example.com/', { lookup }), isCode('private_url_blocked'));
});

test('a hostname resolving only to public addresses is allowed and returns all of them', async () => {
  const lookup = fakeLookup({ 'example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] });
  const checked = await checkOutboundUrl('https://example.com/path?q=1', { lookup });
  assert.deepEqual(checked.addresses, ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']);
});

test('a host that does not resolve is refused as a private one is (no oracle of internal names), plainly when private targets are allowed', async () => {
  const lookup = fakeLookup({ 'intranet.example.com': ['10.9.8.7'] });
  const refusal = async (url: string, allowPrivate: boolean) => {
    try {
      await checkOutboundUrl(url, { lookup, allowPrivate });
    } catch (err) {
      return err as AppError;
    }
    assert.fail(`${url} was allowed`);
  };
  const missing = await refusal('https://nowhere.example.com/', false);
  const hidden = await refusal('https://intranet.example.com/', false);
  assert.equal(missing.code, 'private_url_blocked');
  assert.equal(missing.message.replace('nowhere', 'intranet'), hidden.message);
  const plain = await refusal('https://nowhere.example.com/', true);
  assert.equal(plain.code, 'invalid_request');
  assert.match(plain.message, /nowhere\.example\.com.*does not resolve/);
});

test('a refusal names the host but never echoes the resolved address or URL secrets', async () => {
  const lookup = fakeLookup({ 'intranet.example.com': ['10.9.8.7'] });
  await assert.rejects(checkOutboundUrl('https://intranet.example.com/?token=s3cret', { lookup }), (err: unknown) => {
    isCode('private_url_blocked')(err);
    const message = (err as Error).message;
    assert.match(message, /intranet\.example\.com/);
    assert.doesNotMatch(message, /10\.9\.8\.7|s3cret/);
    return true;
  });
});

test('allowPrivate lets loopback and private targets through but still only over http and https', async () => {
  const lookup = fakeLookup({ localhost: ['127.0.0.1', '::1'], 'db.internal': ['10.0.0.3'] });
  for (const url of ['http://127.0.0.1:8080/', 'http://[::1]/', 'http://localhost/', 'http://db.internal/', 'http://192.168.1.10/']) {
    await checkOutboundUrl(url, { allowPrivate: true, lookup });
  }
  for (const url of ['file:///etc/passwd', 'ftp://127.0.0.1/', 'http://user:pw@127.0.0.1/']) {
    await assert.rejects(checkOutboundUrl(url, { allowPrivate: true, lookup }), isCode('invalid_request'), url);
  }
});

test('allowPrivate still refuses cloud metadata addresses', async () => {
  for (const url of ['http://169.254.169.254/', 'http://[fd00:ec2::254]/', 'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]/', 'http://168.63.129.16/',
    // Alibaba Cloud's and Oracle Cloud's metadata services, outside link-local (in CGNAT and IETF space).
    'http://100.100.100.200/latest/meta-data/', 'http://192.0.0.192/opc/v2/instance/', 'http://[::ffff:100.100.100.200]/']) {
    await assert.rejects(checkOutboundUrl(url, { allowPrivate: true, lookup: noDns }), isCode('private_url_blocked'), url);
  }
});

test('allowPrivate refuses a metadata address carried inside every IPv6 form that embeds an IPv4 address', async () => {
  const embedded = [
    '::169.254.169.254', // IPv4-compatible (::/96, deprecated)
    '::ffff:0:169.254.169.254', // SIIT's IPv4-translated (::ffff:0:0:0/96)
    '::ffff:169.254.169.254', // IPv4-mapped
    '64:ff9b::169.254.169.254', // NAT64
    '2002:a9fe:a9fe::1', // 6to4
    '::100.100.100.200', '::ffff:0:168.63.129.16', '64:ff9b::192.0.0.192', '2002:6464:64c8::',
    // Local-use NAT64 (64:ff9b:1::/48, RFC 8215) at each RFC 6052 prefix length a network may pick inside it: /96,
    // and /48, /56, /64, whose IPv4 bits are split around the reserved u octet (bits 64-71).
    '64:ff9b:1::169.254.169.254', '64:ff9b:1:a9fe:a9:fe00::', '64:ff9b:1:a9:fe:a9fe::', '64:ff9b:1:0:a9:fea9:fe00:0',
    // Teredo (2001::/32): the client's IPv4 address is its last 32 bits inverted.
    '2001:0:4136:e378:8000:63bf:5601:5601', '2001::5601:5601',
  ];
  for (const ip of embedded) {
    await assert.rejects(checkOutboundUrl(`http://[${ip}]/`, { allowPrivate: true, lookup: noDns }), isCode('private_url_blocked'), ip);
    // The same address as a DNS answer, at the check and at the connection's own lookup.
    const lookup = fakeLookup({ 'meta.example.com': [ip] });
    await assert.rejects(checkOutboundUrl('http://meta.example.com/', { allowPrivate: true, lookup }), isCode('private_url_blocked'), ip);
    await assert.rejects(guardedFetch('http://meta.example.com/', { allowPrivate: true, lookup }), isCode('private_url_blocked'), ip);
  }
  // Loopback and private addresses in those forms stay allowed there, as their IPv4 spellings are.
  for (const ip of ['::1', '::10.0.0.1', '::ffff:0:10.0.0.1', '64:ff9b::10.0.0.1', '64:ff9b:1::10.0.0.1']) {
    await checkOutboundUrl(`http://[${ip}]/`, { allowPrivate: true, lookup: noDns });
  }
});

test('guardedFetch fetches from a local server when private targets are allowed', async () => {
  const res = await guardedFetch(`${base}/hello`, { allowPrivate: true });
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'hello');
  assert.equal(res.headers.get('content-type'), 'text/plain');
  assert.equal(res.headers.get('x-multi'), 'a, b');
  assert.equal(res.url, `${base}/hello`);
});

test('guardedFetch refuses the same local server without allowPrivate and never connects', async () => {
  const before = hits;
  await assert.rejects(guardedFetch(`${base}/hello`), isCode('private_url_blocked'));
  assert.equal(hits, before);
});

test('guardedFetch follows a relative redirect and reports the final URL', async () => {
  const res = await guardedFetch(`${base}/to-hello`, { allowPrivate: true });
  assert.equal(res.body.toString(), 'hello');
  assert.equal(res.url, `${base}/hello`);
});

test('guardedFetch turns a POST into a GET on 303 as fetch does', async () => {
  const res = await guardedFetch(`${base}/see-other`, { allowPrivate: true, method: 'POST', body: '{}', headers: { authorization: 'Bearer x' } });
  assert.deepEqual(JSON.parse(res.body.toString()), { method: 'GET', authorization: 'Bearer x' });
});

test('a redirect to a non-http scheme is refused', async () => {
  await assert.rejects(guardedFetch(`${base}/to-ftp`, { allowPrivate: true }), isCode('invalid_request'));
  await assert.rejects(guardedFetch(`${base}/to-file`, { allowPrivate: true }), isCode('invalid_request'));
});

test('every redirect hop is re-checked, so a redirect to the metadata address is refused', async () => {
  await assert.rejects(guardedFetch(`${base}/to-metadata`, { allowPrivate: true }), isCode('private_url_blocked'));
});

test('the redirect limit is enforced', async () => {
  await assert.rejects(guardedFetch(`${base}/loop`, { allowPrivate: true }), (err: unknown) => {
    isCode('invalid_request')(err);
    assert.match((err as Error).message, /Too many redirects/);
    return true;
  });
  const ok = await guardedFetch(`${base}/chain?n=2`, { allowPrivate: true, maxRedirects: 2 });
  assert.equal(ok.body.toString(), 'end of chain');
  await assert.rejects(guardedFetch(`${base}/chain?n=3`, { allowPrivate: true, maxRedirects: 2 }), isCode('invalid_request'));
});

test('a response body larger than maxBytes is aborted with an error', async () => {
  await assert.rejects(guardedFetch(`${base}/big`, { allowPrivate: true, maxBytes: 100_000 }), isCode('payload_too_large'));
  const res = await guardedFetch(`${base}/big`, { allowPrivate: true, maxBytes: 2 * 1024 * 1024 });
  assert.equal(res.body.length, 64 * 16 * 1024);
});

test('a server that does not answer in time fails with unavailable', async () => {
  await assert.rejects(guardedFetch(`${base}/slow`, { allowPrivate: true, timeoutMs: 200 }), (err: unknown) => {
    isCode('unavailable')(err);
    assert.match((err as Error).message, /did not respond within 200 ms/);
    return true;
  });
});

test('the guarded dispatcher refuses a hostname that resolves to loopback even when the URL check is bypassed', async () => {
  const port = (server.address() as AddressInfo).port;
  const before = hits;
  const dispatcher = createGuardedDispatcher({ lookup: fakeLookup({ 'rebound.example.com': ['127.0.0.1'] }) });
  try {
    await assert.rejects(request(`http://rebound.example.com:${port}/hello`, { dispatcher }), isCode('private_url_blocked'));
    await assert.rejects(request(`http://127.0.0.1:${port}/hello`, { dispatcher }), isCode('private_url_blocked'));
    await assert.rejects(request(`http://[::ffff:127.0.0.1]:${port}/hello`, { dispatcher }), isCode('private_url_blocked'));
  } finally {
    await dispatcher.destroy();
  }
  assert.equal(hits, before);
});

test('the guarded dispatcher connects to the checked address when private targets are allowed', async () => {
  const port = (server.address() as AddressInfo).port;
  const dispatcher = createGuardedDispatcher({ allowPrivate: true, lookup: fakeLookup({ 'app.example.com': ['127.0.0.1'] }) });
  try {
    const res = await request(`http://app.example.com:${port}/hello`, { dispatcher });
    assert.equal(await res.body.text(), 'hello');
  } finally {
    await dispatcher.destroy();
  }
});

test('DNS rebinding between the check and the connection is caught by the dispatcher', async () => {
  const port = (server.address() as AddressInfo).port;
  const before = hits;
  let calls = 0;
  // First answer (the URL check) is public, the second (the connection's own lookup) is loopback.
  const lookup: OutboundLookup = async () => [{ address: calls++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
  await assert.rejects(guardedFetch(`http://rebind.example.com:${port}/hello`, { lookup }), isCode('private_url_blocked'));
  assert.equal(calls, 2);
  assert.equal(hits, before);
});

/**
 * A resolver whose lookups never answer until `release()`: the stand-in for DNS that does not respond, each lookup
 * holding its thread of libuv's pool while it waits (abandoning it does not give the thread back).
 */
function hangingLookup(): { lookup: OutboundLookup; calls: () => number; release: () => void } {
  const waiting: Array<() => void> = [];
  const lookup: OutboundLookup = (hostname) =>
    new Promise((_resolve, reject) => {
      waiting.push(() => reject(Object.assign(new Error(`getaddrinfo EAI_AGAIN ${hostname}`), { code: 'EAI_AGAIN' })));
    });
  return { lookup, calls: () => waiting.length, release: () => waiting.forEach((settle) => settle()) };
}

test('a host name lookup that never answers is abandoned with a retryable unavailable', { timeout: loadScaled(30_000) }, async () => {
  const dns = hangingLookup();
  try {
    for (const allowPrivate of [false, true]) {
      // An organization each: the first abandoned lookup fills its organization's share.
      const tenantId = `org_${allowPrivate}`;
      await assert.rejects(checkOutboundUrl('https://slow-dns.example.com/', { allowPrivate, lookup: dns.lookup, lookupTimeoutMs: 20, tenantId }), (err: unknown) => {
        isCode('unavailable')(err);
        assert.match((err as Error).message, /slow-dns\.example\.com.*did not resolve within 20 ms/);
        assert.equal((err as AppError).headers['retry-after'], '5');
        return true;
      });
    }
  } finally {
    dns.release();
  }
});

test('guard lookups in flight are capped, abandoned ones included, and the check beyond the cap is refused retryably', { timeout: loadScaled(30_000) }, async () => {
  const dns = hangingLookup();
  const fast = fakeLookup({ 'hooks.example.com': ['93.184.216.34'] });
  let refusal: AppError | undefined;
  try {
    // Each check gives up on its lookup, which still holds its thread: they add up until the cap refuses one. Each for
    // an organization of its own, so that no organization's share (half of the cap) is what refuses.
    for (let i = 0; i < 16 && refusal === undefined; i++) {
      try {
        await checkOutboundUrl(`https://slow-${i}.example.com/`, { lookup: dns.lookup, lookupTimeoutMs: 10, tenantId: `org_${i}` });
        assert.fail('a lookup that never answers was taken as an answer');
      } catch (err) {
        isCode('unavailable')(err);
        if (!/did not resolve within/.test((err as Error).message)) refusal = err as AppError;
      }
    }
    assert.ok(refusal, 'no lookup was refused');
    if (process.env.UV_THREADPOOL_SIZE === undefined) assert.equal(dns.calls(), 2, 'half of the default thread pool of 4');
    assert.match(refusal.message, /Too many host name lookups/);
    assert.equal(refusal.headers['retry-after'], '5');
    // Any guard lookup is refused while the cap is reached, one of a host that would answer at once included.
    await assert.rejects(checkOutboundUrl('https://hooks.example.com/', { lookup: fast, tenantId: 'org_other' }), isCode('unavailable'));
  } finally {
    dns.release();
  }
  // Once the abandoned lookups are over, their slots are free again.
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual((await checkOutboundUrl('https://hooks.example.com/', { lookup: fast })).addresses, ['93.184.216.34']);
});

test("UV_THREADPOOL_SIZE is read as libuv reads it, so the lookups' share is half of the pool node really has", () => {
  assert.equal(threadPoolSize(undefined), 4);
  assert.equal(threadPoolSize('8'), 8);
  // libuv's atoi: leading white space and digits; 0, empty or no number is a pool of 1 (svc counted those as 4).
  assert.equal(threadPoolSize(' 8'), 8);
  assert.equal(threadPoolSize('8abc'), 8);
  assert.equal(threadPoolSize('0'), 1);
  assert.equal(threadPoolSize(''), 1);
  assert.equal(threadPoolSize('abc'), 1);
  // At most 1024, and a negative count is a huge unsigned one (svc counted 2000 as 2000).
  assert.equal(threadPoolSize('2000'), 1024);
  assert.equal(threadPoolSize('-1'), 1024);
  assert.equal(threadPoolSize('1024'), 1024);
});
