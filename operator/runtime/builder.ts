/**
 * The controller builder, after controller-runtime's `ctrl.NewControllerManagedBy(mgr)`:
 * a builder is bound to the manager it was obtained from, and `complete` registers the
 * controller there. A built controller nobody added would watch nothing and reconcile
 * nothing without any error, so building and registering are one step.
 */
import {
  newController,
  type Controller,
  type ControllerDeps,
  type ControllerOptions,
  type ControllerSource,
  type EventSourceOptions,
  type KeyChannel,
} from './controller';
import type { Reconciler } from './reconcile';
import type { KubeObject, ObjectKey, ResourceKind } from './types';

/**
 * What a builder registers its controller with; `Manager` is one. `add` throws when the
 * manager already started or the name is taken, and `complete` lets that surface.
 */
export interface ControllerManager extends ControllerDeps {
  add(controller: Controller): unknown;
}

/**
 * Starts a controller managed by `mgr`:
 * `newControllerManagedBy(mgr, name).for(kind).owns(kind).complete(reconciler)`.
 * `name` labels the controller's metrics and logs.
 */
export function newControllerManagedBy(mgr: ControllerManager, name: string): ControllerBuilder {
  return new ControllerBuilder(name, mgr);
}

/** Collects a controller's sources and options; obtain one with `newControllerManagedBy`. */
export class ControllerBuilder {
  private primary?: { kind: ResourceKind; options: EventSourceOptions };
  private readonly secondary: ControllerSource[] = [];
  private readonly channels: KeyChannel[] = [];
  private options: ControllerOptions = {};

  constructor(
    private readonly name: string,
    private readonly mgr: ControllerManager,
  ) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) {
      throw new Error(`controller name "${name}" must be a lowercase RFC 1123 label (it labels metrics)`);
    }
  }

  /** The kind this controller reconciles; each event enqueues the object's own key. */
  for<T extends KubeObject>(kind: ResourceKind, options: EventSourceOptions<T> = {}): this {
    if (this.primary) throw new Error(`controller "${this.name}": for() may be called only once`);
    this.primary = { kind, options: options as EventSourceOptions };
    return this;
  }

  /**
   * A kind the controller creates; an event enqueues the object's controller owner when
   * that ownerReference has the For kind's group and kind (the version is ignored, as in
   * controller-runtime, since an owner may be referenced through any served version).
   */
  owns<T extends KubeObject>(kind: ResourceKind, options: EventSourceOptions<T> = {}): this {
    const primary = this.requirePrimary('owns');
    this.secondary.push({ kind, map: (obj) => controllerOwnerKeys(obj, primary), options: options as EventSourceOptions });
    return this;
  }

  /** Any kind; `mapFn` turns an object into the keys of the primaries that depend on it. */
  watches<T extends KubeObject>(kind: ResourceKind, mapFn: (obj: T) => readonly ObjectKey[], options: EventSourceOptions<T> = {}): this {
    this.secondary.push({ kind, map: mapFn as (obj: KubeObject) => readonly ObjectKey[], options: options as EventSourceOptions });
    return this;
  }

  /** Keys sent on `channel` are enqueued as they are (they name primaries). */
  watchesChannel(channel: KeyChannel): this {
    this.channels.push(channel);
    return this;
  }

  /** Runner options; later calls override earlier ones field by field. */
  withOptions(options: ControllerOptions): this {
    this.options = { ...this.options, ...options };
    return this;
  }

  /**
   * Builds the controller, registers it with the manager (which starts it with its
   * informers, after leader election) and returns it. Throws when the manager already
   * started or another controller has this name.
   */
  complete(reconciler: Reconciler): Controller {
    const primary = this.requirePrimary('complete');
    const controller = newController(this.name, this.mgr, reconciler, {
      primary,
      secondary: this.secondary,
      channels: this.channels,
      options: this.options,
    });
    this.mgr.add(controller);
    return controller;
  }

  private requirePrimary(caller: string): { kind: ResourceKind; options: EventSourceOptions } {
    if (!this.primary) throw new Error(`controller "${this.name}": call for() before ${caller}()`);
    return this.primary;
  }
}

/** Keys of the controlling owner of `obj`, when it is of the primary's group and kind. */
function controllerOwnerKeys(obj: KubeObject, primary: { kind: ResourceKind }): ObjectKey[] {
  const namespace = primary.kind.namespaced ? (obj.metadata?.namespace ?? '') : '';
  return (obj.metadata?.ownerReferences ?? [])
    .filter((ref) => ref.controller === true && ref.kind === primary.kind.kind && groupOf(ref.apiVersion) === primary.kind.group)
    .map((ref) => ({ namespace, name: ref.name }));
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
