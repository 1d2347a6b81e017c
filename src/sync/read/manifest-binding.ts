import { ManifestNamespaceError } from '../../errors.js'

/** The namespace and network a publish belongs to (the config's, or what a command was given). */
export interface Binding { readonly namespace: string, readonly network: string }

/**
 * Refuses a manifest bound to another namespace or network than `wanted` (its binding is in the
 * sealed body: only the key's holder could have made it, so this is a replay, never damage). An
 * unbound manifest (written before manifests were bound) passes here; whether it may be merged is
 * {@link unboundMayMerge}'s to say.
 */
export function checkBinding (manifest: { readonly namespace?: string, readonly network?: string }, cid: string, wanted: Binding | undefined): void {
  if (wanted === undefined || manifest.namespace === undefined) return
  if (manifest.namespace !== wanted.namespace || manifest.network !== wanted.network) {
    throw new ManifestNamespaceError(`manifest ${cid} was published for namespace ${manifest.namespace} on ${manifest.network ?? '?'}, not ${wanted.namespace} on ${wanted.network}: ` +
      'a publish of another namespace put behind this pointer is never merged; if the pointer holds it, `cidsync pointer repair` puts this device\'s index in its place')
  }
}

/**
 * Whether an unbound manifest at the pointer may be merged: only where it is genuinely older
 * format, i.e. this device has never seen a bound one in this namespace, or it is itself in this
 * namespace's chain as this device knows it (the pointer set back to before the binding), or it was
 * made on top of a publish of that chain (an older cidsync publishing after this one). Otherwise it
 * may be another namespace's, replayed: refused.
 */
export function unboundMayMerge (manifest: { readonly namespace?: string, readonly previous: string | null }, cid: string, known: { readonly boundSeen: boolean, readonly ours: () => ReadonlySet<string> }): void {
  if (manifest.namespace !== undefined || !known.boundSeen) return
  const ours = known.ours()
  if (ours.has(cid) || (manifest.previous !== null && ours.has(manifest.previous))) return
  throw new ManifestNamespaceError(`manifest ${cid} names no namespace (an older cidsync's format), and this namespace's publishes are bound to it; it is not made on top of any publish of this namespace this device knows, so it may be another namespace's, replayed: refused. ` +
    'If a device of yours still runs an older cidsync, upgrade it; otherwise `cidsync pointer repair` puts this device\'s index in its place')
}
