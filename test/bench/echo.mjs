#!/usr/bin/env node
/**
 * A TCP echo server on 127.0.0.1 for lib's `loopbackCalibration`: prints its port, then sends every byte back as it
 * arrives (no Nagle delay), until it is killed.
 */
import net from 'node:net';

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('data', (data) => socket.write(data));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
