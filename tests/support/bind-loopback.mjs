// Preloaded (node --import) into Node MCP peers that offer no host option, such as
// server-everything in streamableHttp mode: pins a numeric-port listener to 127.0.0.1 and reports
// the port the kernel picked for port 0 on stderr, so tests need no guessed port and expose nothing.
import net from 'node:net';
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^[0-9]+$/.test(args[0]))) {
    args[0] = Number(args[0]);
    if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  }
  this.once('listening', () => {
    const a = this.address();
    process.stderr.write(`airlock-test-listening ${a.address} ${a.port}\n`);
  });
  return listen.apply(this, args);
};
