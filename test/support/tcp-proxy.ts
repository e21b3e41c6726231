import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** A TCP proxy in front of a database server, to take the server away from the app and back. */
export interface TcpProxy {
  /** The port the app connects to (127.0.0.1). */
  readonly port: number;
  /** Connections the proxy has accepted so far. */
  readonly accepted: number;
  /**
   * "Stops the database": closes the listener (new connections are refused, ECONNREFUSED) and
   * destroys every open connection, both sides (the app's pool loses its connections mid-query).
   */
  cut(): Promise<void>;
  /** Listens again on the same port and forwards new connections again. */
  restore(): Promise<void>;
  /** Cuts and stays down (afterAll). */
  close(): Promise<void>;
}

/** A proxy on a free port of 127.0.0.1 that pipes every connection to `targetHost:targetPort`. */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let server: Server | undefined;
  let port = 0;

  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };

  const listen = (): Promise<void> => {
    const s = createServer((client) => {
      accepted++;
      const upstream = connect(targetPort, targetHost);
      track(client);
      track(upstream);
      // Either side going away takes the other with it, as a dead server or network would.
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    server = s;
    return new Promise((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        s.off('error', reject);
        port = (s.address() as AddressInfo).port;
        resolve();
      });
    });
  };

  const cut = async (): Promise<void> => {
    const s = server;
    server = undefined;
    const closed = s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closed;
  };

  await listen();
  return {
    get port() {
      return port;
    },
    get accepted() {
      return accepted;
    },
    cut,
    restore: async () => {
      if (!server) await listen();
    },
    close: cut,
  };
}
