/**
 * IP address literals: their parts (shared by the outbound URL guard, src/net/url-guard.ts) and the key a client
 * address is counted under by per-address limits.
 */
import { isIP } from 'node:net';

/** Expands a valid IPv6 string (possibly with a dotted IPv4 tail) into its eight 16-bit groups. */
export function hextets(ip: string): number[] {
  let text = ip;
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(2).map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros: string[] = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16));
}

/**
 * The IPv4 address carried inside an IPv6 one by IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, deprecated,
 * but for :: and ::1), SIIT's IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
 * addresses, which can all reach that IPv4 host (the deprecated two through a tunnel or a translator). Checked
 * explicitly rather than trusting BlockList: whether it matches mapped addresses against IPv4 rules has varied
 * across Node versions.
 */
export function embeddedIPv4(ip: string): string | null {
  return embeddedIPv4Of(hextets(ip));
}

function embeddedIPv4Of(h: number[]): string | null {
  const v4 = (hi: number, lo: number): string => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  if (h.slice(0, 4).every((x) => x === 0)) {
    if (h[4] === 0 && h[5] === 0xffff) return v4(h[6]!, h[7]!);
    if (h[4] === 0 && h[5] === 0 && (h[6] !== 0 || h[7]! > 1)) return v4(h[6]!, h[7]!);
    if (h[4] === 0xffff && h[5] === 0) return v4(h[6]!, h[7]!);
  }
  if (h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((x) => x === 0)) return v4(h[6]!, h[7]!);
  if (h[0] === 0x2002) return v4(h[1]!, h[2]!);
  return null;
}

/**
 * The IPv4 addresses an IPv6 one may reach through a translator or tunnel whose embedding cannot be read from the
 * address alone, so every reading is given: local-use NAT64 (64:ff9b:1::/48, RFC 8215), where a network picks an
 * RFC 6052 prefix of 48, 56, 64 or 96 bits inside the block (below 96 the IPv4 bits are split around the reserved
 * u octet, bits 64-71), and Teredo (2001::/32, RFC 4380), whose client address is the last 32 bits inverted.
 * Neither is public unicast (64:ff9b:1::/48 lies outside 2000::/3, Teredo in 2001::/23); the readings matter where
 * private targets are allowed and a metadata address must still be refused.
 */
export function ambiguousEmbeddedIPv4s(ip: string): string[] {
  const h = hextets(ip);
  const v4 = (a: number, b: number, c: number, d: number): string => [a, b, c, d].map((octet) => octet & 0xff).join('.');
  if (h[0] === 0x64 && h[1] === 0xff9b && h[2] === 1) {
    return [
      v4(h[3]! >> 8, h[3]!, h[4]!, h[5]! >> 8), // /48: a.b in bits 48-63, c.d in 72-87
      v4(h[3]!, h[4]!, h[5]! >> 8, h[5]!), // /56: a in 56-63, b.c.d in 72-95
      v4(h[4]!, h[5]! >> 8, h[5]!, h[6]! >> 8), // /64: a.b.c.d in 72-103
      v4(h[6]! >> 8, h[6]!, h[7]! >> 8, h[7]!), // /96: the last 32 bits, as in 64:ff9b::/96
    ];
  }
  const teredo = teredoClientIPv4(h);
  return teredo ? [teredo] : [];
}

/** Teredo (2001::/32, RFC 4380): the client's address (its NAT's public one) is the last 32 bits inverted. */
function teredoClientIPv4(h: number[]): string | null {
  if (h[0] !== 0x2001 || h[1] !== 0) return null;
  return [~h[6]! >> 8, ~h[6]!, ~h[7]! >> 8, ~h[7]!].map((octet) => octet & 0xff).join('.');
}

/** Strips URL brackets and an IPv6 zone id (`fe80::1%eth0`), which BlockList does not accept. */
export function bareIp(ip: string): string {
  return ip.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
}

/**
 * The key per-address limits count a client address under (failed authentications, logins, signups, resets): an IPv4
 * address as it is, an IPv6 address by its /64, the smallest block a site is given (a client holds all 2^64 addresses
 * of its /64 and could rotate through them past any per-address limit), anything else (the local socket's `local`) as
 * it is. A port written with the address (by a proxy) is left out. An IPv6 address that carries an IPv4 host's address
 * counts as that IPv4 address (`ipv6LimitKey`).
 */
export function limitKeyOfAddress(address: string): string {
  // Every request asks (the failed-authentication limiter): an IPv4 address is kept without parsing it.
  if (!address.includes(':')) return address;
  // A trusted proxy may write the client's port with its address (`203.0.113.7:51234`, `[2001:db8::1]:443`):
  // counted by address, or every new connection of the client would have a counter of its own.
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(address);
  if (v4WithPort) return v4WithPort[1]!;
  const bare = bareIp(address.replace(/^(\[[^\]]*\]):\d{1,5}$/, '$1'));
  if (isIP(bare) !== 6) return address;
  return ipv6LimitKey(hextets(bare));
}

/**
 * An IPv6 client's key. One IPv4 host written as IPv6 counts as its IPv4 address: a 6to4 host (2002::/16) holds the
 * whole /48 behind its address (65,536 /64s) and a Teredo client (2001::/32) picks its server, flags and port bits,
 * so either could rotate /64s past every limit; the mapped, IPv4-translated and IPv4-compatible forms and NAT64's
 * well-known prefix (64:ff9b::/96: an IPv4 client seen through a translator, as an IPv6-only server behind SIIT-DC
 * sees every one) hold one IPv4 address each, which a /64 would lump with every other IPv4 client's. Local-use NAT64
 * (64:ff9b:1::/48) puts the IPv4 address where its network's prefix length says, which the address does not tell:
 * its whole address is the key, one per IPv4 host whatever the length (only that network's translator sends from it).
 * The checks read the first groups, already parsed: a native IPv6 client pays a few comparisons.
 */
function ipv6LimitKey(h: number[]): string {
  const v4 = embeddedIPv4Of(h) ?? teredoClientIPv4(h);
  if (v4) return v4;
  if (h[0] === 0x64 && h[1] === 0xff9b && h[2] === 1) return h.map((x) => x.toString(16)).join(':');
  return `${h.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
}

/**
 * Whether a client address a trusted proxy forwarded is an IP address, in a form `limitKeyOfAddress` reads: bare, or
 * with a port (an IPv6 one in brackets). proxy-addr hands the X-Forwarded-For entry on as written, and `005.5.5.5`,
 * `0x05050505` or `unknown` would each be counted as an address of its own by every per-address limit.
 */
export function isForwardedIp(entry: string): boolean {
  if (isIP(entry) !== 0) return true;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(entry);
  if (v4WithPort) return isIP(v4WithPort[1]!) === 4;
  const bracketed = /^\[([^\]]*)\](?::\d{1,5})?$/.exec(entry);
  return bracketed !== null && isIP(bracketed[1]!) === 6;
}
