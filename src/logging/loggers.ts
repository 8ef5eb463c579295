import bunyan from 'bunyan';

/** One child logger per component (`admin`, `config`, `upstream`, ...). */
export interface Loggers {
  readonly root: bunyan;
  get(component: string): bunyan;
}

export function createLoggers(level: bunyan.LogLevel = 'info'): Loggers {
  const root = bunyan.createLogger({ name: 'proxy', level, stream: process.stderr });
  const children = new Map<string, bunyan>();
  return {
    root,
    get(component) {
      let child = children.get(component);
      if (!child) children.set(component, (child = root.child({ component })));
      return child;
    },
  };
}
