/**
 * The routes of a built app, read from its router (fastify's printRoutes), so that a table over them is complete: a
 * route added later is in the table too.
 */
type Router = { printRoutes(options: { commonPrefix: boolean }): string };

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];

/** Every route of the management API (under /api/v1): `[method, path]`, path parameters as the router names them (`:id`). */
export function managementRoutes(app: Router): Array<[string, string]> {
  const routes: Array<[string, string]> = [];
  const parents: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const node = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!node) continue;
    const depth = [...node[1]!].length / 4;
    const path = (depth === 0 ? '' : parents[depth - 1]!) + node[2]!;
    parents[depth] = path;
    for (const method of (node[3] ?? '').split(', ')) {
      if (METHODS.includes(method) && path.startsWith('/api/v1/')) routes.push([method, path]);
    }
  }
  return routes;
}

/** Every write of the management API (POST, PUT, PATCH, DELETE under /api/v1). */
export function writeRoutes(app: Router): Array<[string, string]> {
  return managementRoutes(app).filter(([method]) => WRITES.includes(method));
}
