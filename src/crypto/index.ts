/**
 * Signatures the service's protocols need, shared by the clients (signing) and the local service
 * (checking). A leaf room: it imports only errors.
 */
export { personalSign, recoverSigner, walletAddress, parseWalletKey, newWalletKey, formatWalletKey, personalMessageHash } from './wallet.js'
