/** The key per-address limits count a client address under (src/net/addresses.ts). */
import assert from 'node:assert/strict';
import test from 'node:test';
import { isForwardedIp, limitKeyOfAddress } from '../../src/net/addresses.ts';

test('IPv4 as it is, IPv4-mapped IPv6 as its IPv4 address, IPv6 by its /64, anything else as it is', () => {
  assert.equal(limitKeyOfAddress('203.0.113.7'), '203.0.113.7');
  assert.equal(limitKeyOfAddress('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(limitKeyOfAddress('::ffff:cb00:7107'), '203.0.113.7');
  assert.equal(limitKeyOfAddress('2001:db8:aa:bb::1'), '2001:db8:aa:bb::/64');
  assert.equal(limitKeyOfAddress('2001:0db8:00aa:00bb:ffff:1:2:3'), '2001:db8:aa:bb::/64');
  assert.equal(limitKeyOfAddress('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(limitKeyOfAddress('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(limitKeyOfAddress('::1'), '0:0:0:0::/64');
  assert.equal(limitKeyOfAddress('local'), 'local');
});

test('an IPv4 host written as IPv6 counts as that IPv4 address: it cannot rotate through the /64s its form gives it', () => {
  // 6to4 (2002::/16): the host's IPv4 address in bits 16-47, and the whole /48 behind it (65,536 /64s) its own.
  assert.equal(limitKeyOfAddress('2002:c633:6407::1'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('2002:c633:6407:1::1'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('2002:c633:6407:ffff:1:2:3:4'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('2002:c633:6408::1'), '198.51.100.8');
  // Teredo (2001::/32): the client's (its NAT's) address inverted in the last 32 bits; the server, flags and port vary.
  assert.equal(limitKeyOfAddress('2001:0:4136:e378:8000:63bf:39cc:9bf8'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('2001:0:cb00:7101:0:f00d:39cc:9bf8'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('[2001::8000:1234:39cc:9bf8]:443'), '198.51.100.7');
  // 2001:0:1::/48 is inside Teredo; 2001:1::/32 and 2001:db8::/32 are not.
  assert.equal(limitKeyOfAddress('2001:1:aa:bb::1'), '2001:1:aa:bb::/64');
  // IPv4-compatible (deprecated) and SIIT's IPv4-translated forms; :: and ::1 are no IPv4 host.
  assert.equal(limitKeyOfAddress('::198.51.100.7'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('::ffff:0:c633:6407'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('::1'), '0:0:0:0::/64');
  // NAT64's well-known prefix (RFC 6052): an IPv4 client an IPv6-only server sees through a translator (SIIT-DC) is
  // that client, not one /64 shared by every IPv4 client.
  assert.equal(limitKeyOfAddress('64:ff9b::198.51.100.7'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('64:ff9b::c633:6408'), '198.51.100.8');
  // Local-use NAT64 (64:ff9b:1::/48): where the IPv4 address sits depends on the prefix length the network chose, so
  // the whole address is the key (one per IPv4 host, whichever the length), never a /64 that may hold all of them.
  assert.equal(limitKeyOfAddress('64:ff9b:1::c633:6407'), '64:ff9b:1:0:0:0:c633:6407');
  assert.notEqual(limitKeyOfAddress('64:ff9b:1::c633:6407'), limitKeyOfAddress('64:ff9b:1::c633:6408'));
});

test('an address a proxy wrote with its port is counted by the address', () => {
  assert.equal(limitKeyOfAddress('198.51.100.7:20001'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('198.51.100.7:20002'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('[2001:db8::1]:1001'), '2001:db8:0:0::/64');
  assert.equal(limitKeyOfAddress('[2001:db8::2]:1002'), '2001:db8:0:0::/64');
  assert.equal(limitKeyOfAddress('[::ffff:198.51.100.7]:443'), '198.51.100.7');
  assert.equal(limitKeyOfAddress('[2001:db8::1]'), '2001:db8:0:0::/64');
  // Not an address with a port: kept as it is.
  assert.equal(limitKeyOfAddress('1.2.3.4:port'), '1.2.3.4:port');
});

test('a forwarded entry is an IP address only in the forms counted by the address: bare, or with a port', () => {
  for (const entry of ['203.0.113.7', '203.0.113.7:80', '2001:db8::1', '[2001:db8::1]', '[2001:db8::1]:443', '::ffff:203.0.113.7', 'fe80::1%eth0']) {
    assert.equal(isForwardedIp(entry), true, entry);
  }
  for (const entry of ['005.5.5.5', '0x05050505', '5.5.5.05', 'unknown', '005.5.5.5:80', '[5.5.5.5]:80', '1.2.3.4:port', '', '999.1.1.1', '[2001:db8::1]x']) {
    assert.equal(isForwardedIp(entry), false, entry);
  }
});
