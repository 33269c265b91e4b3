// Preloaded with `node --import` in front of a server that listens on every interface
// (server-everything's Streamable HTTP mode): its listen(port, cb) binds 127.0.0.1 only.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0])))
        if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
    return listen.apply(this, args);
};
