/**
 * The RxJS values this program uses, each from its own module. `import ... from 'rxjs'`
 * loads the package's index, which requires every operator and scheduler (223 modules, 1.7 MB
 * of heap a thread); these 64 modules are 0.8 MB, in the main thread and in every
 * data-plane worker (bench/README.md, "Footprint: modules a worker does not load"). RxJS
 * exports its `internal/*` paths in its package map for this; the classes are the ones its
 * index re-exports (one CommonJS module each), so values from either way mix. Types still come
 * from `rxjs` (`import type`, which loads nothing).
 */
export { BehaviorSubject } from 'rxjs/internal/BehaviorSubject';
export { Observable } from 'rxjs/internal/Observable';
export { distinctUntilChanged } from 'rxjs/internal/operators/distinctUntilChanged';
export { map } from 'rxjs/internal/operators/map';
export { observeOn } from 'rxjs/internal/operators/observeOn';
export { pairwise } from 'rxjs/internal/operators/pairwise';
export { startWith } from 'rxjs/internal/operators/startWith';
export { Subject } from 'rxjs/internal/Subject';
export { asyncScheduler } from 'rxjs/internal/scheduler/async';
export { queueScheduler } from 'rxjs/internal/scheduler/queue';
export { VirtualAction, VirtualTimeScheduler } from 'rxjs/internal/scheduler/VirtualTimeScheduler';
