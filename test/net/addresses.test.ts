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
