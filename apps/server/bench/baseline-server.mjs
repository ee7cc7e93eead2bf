#!/usr/bin/env node
/**
 * The device-list bench's baseline: a bare fastify route answering fixed bytes (argv[2], a
 * file) as application/json. A separate process, pinned like the real server, so both are
 * measured under the same conditions. Prints `listening <port>`.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const bytes = readFileSync(process.argv[2]);
const app = Fastify({ logger: false });
app.get('/devices', (_req, reply) => reply.type('application/json; charset=utf-8').send(bytes));
await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`listening ${app.server.address().port}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
