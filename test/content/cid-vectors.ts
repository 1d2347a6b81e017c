import type { CidProfileName } from '../../src/content/index.js'

/**
 * Published CIDs (Kubo's tests and the UnixFS spec) for known inputs. A test that disagrees with
 * one of these is wrong about `ipfs add`, whatever else it agrees with.
 */
export interface TextVector { text: string, profile: CidProfileName, cid: string }
export interface StreamVector { seed: string, length: number, profile: CidProfileName, cid: string }

export const TEXT_VECTORS: TextVector[] = [
  { text: '', profile: 'unixfs-v0-2015', cid: 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH' },
  { text: '', profile: 'kubo-cidv1', cid: 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku' },
  { text: 'hello world', profile: 'unixfs-v0-2015', cid: 'Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD' },
  { text: 'hello world', profile: 'kubo-cidv1', cid: 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e' },
  { text: 'hello world\n', profile: 'unixfs-v0-2015', cid: 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o' },
  { text: 'hello world\n', profile: 'kubo-cidv1', cid: 'bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4' },
  { text: 'Hello Worlds!\n', profile: 'unixfs-v0-2015', cid: 'QmVr26fY1tKyspEJBniVhqxQeEjhF78XerGiqWAwraVLQH' },
  { text: 'Hello Venus!\n', profile: 'kubo-cidv1', cid: 'bafkreihfsphazrk2ilejpekyltjeh5k4yvwgjuwg26ueafohqioeo3sdca' }
]

/** Chunk boundaries: exactly one chunk, one byte over; 174 chunks (one full node), one byte over. */
export const STREAM_VECTORS: StreamVector[] = [
  { seed: 'chunk-v0-seed', length: 262144, profile: 'unixfs-v0-2015', cid: 'QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE' },
  { seed: 'chunk-v0-seed', length: 262145, profile: 'unixfs-v0-2015', cid: 'QmYyLxtzZyW22zpoVAtKANLRHpDjZtNeDjQdJrcQNWoRkJ' },
  { seed: 'v0-seed', length: 45613056, profile: 'unixfs-v0-2015', cid: 'QmUbBALi174SnogsUzLpYbD4xPiBSFANF4iztWCsHbMKh2' },
  { seed: 'v0-seed', length: 45613057, profile: 'unixfs-v0-2015', cid: 'QmV81WL765sC8DXsRhE5fJv2rwhS4icHRaf3J9Zk5FdRnW' },
  { seed: 'chunk-v1-seed', length: 1048576, profile: 'unixfs-v1-2025', cid: 'bafkreiacndfy443ter6qr2tmbbdhadvxxheowwf75s6zehscklu6ezxmta' },
  { seed: 'chunk-v1-seed', length: 1048577, profile: 'unixfs-v1-2025', cid: 'bafybeigmix7t42i6jacydtquhet7srwvgpizfg7gjbq7627d35mjomtu64' }
]
