import { describe, it, expect } from 'vitest'
import { personalSign, recoverSigner, walletAddress, parseWalletKey, newWalletKey } from '../../src/crypto/index.js'

// The account and signature of web3.js's documentation for `web3.eth.accounts.sign('Some data', key)`.
const KEY = '0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318'
const ADDRESS = '0x2c7536e3605d9c16a7a3d7b1898e529396a65c23'
const SIGNATURE = '0xb91467e570a6466aa9e9876cbcd013baba02900b8979d43fe208a4a4f339f5fd6007e74cd82e037b800186422fc2da167c747ef045e5d18a5f5d4300f8e1a0291c'

describe('wallet signatures (EIP-191 personal_sign)', () => {
  it('derives the address of a known key', () => {
    expect(walletAddress(parseWalletKey(KEY))).toBe(ADDRESS)
  })

  it('signs exactly as web3 does', () => {
    expect(personalSign('Some data', parseWalletKey(KEY))).toBe(SIGNATURE)
  })

  it('recovers the signer, and nobody from a tampered message or signature', () => {
    expect(recoverSigner('Some data', SIGNATURE)).toBe(ADDRESS)
    expect(recoverSigner('Some datA', SIGNATURE)).not.toBe(ADDRESS)
    expect(recoverSigner('Some data', SIGNATURE.slice(0, -2) + '1d')).toBeUndefined()
    expect(recoverSigner('Some data', '0x1234')).toBeUndefined()
  })

  it('round-trips a fresh key', () => {
    const key = newWalletKey()
    const message = 'Please prove you are the owner of this wallet by signing this message, nonce=1699843285334'
    expect(recoverSigner(message, personalSign(message, key))).toBe(walletAddress(key))
  })

  it('refuses a malformed key', () => {
    expect(() => parseWalletKey('0x1234')).toThrow(/64 hex digits/)
  })
})
