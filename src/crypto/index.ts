/**
 * Signatures the service's protocols need, shared by the clients and the local service: wallet
 * signatures (the clients sign, the service checks) and IPNS records (the service signs, both
 * check). A leaf room: it imports only errors.
 */
export { personalSign, recoverSigner, walletAddress, parseWalletKey, newWalletKey, formatWalletKey, personalMessageHash } from './wallet.js'
export { IPNS_RECORD_TYPE, MAX_IPNS_RECORD_BYTES, parseIpnsName, parseValidity, verifyIpnsRecord, ipfsCidOf } from './ipns-record.js'
export type { IpnsName, VerifiedIpnsRecord } from './ipns-record.js'
