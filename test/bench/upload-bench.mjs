import { createReadStream, createWriteStream, fsyncSync, openSync, closeSync } from 'node:fs'
import { createServer } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { join } from 'node:path'
import { request } from 'undici'
import { writeStreamFile } from './data.mjs'
import { startLocalService } from '../../dist/local-service/index.js'
import { createServiceClients } from '../../dist/remote/index.js'
import { cidProfile } from '../../dist/content/index.js'
import { newWalletKey } from '../../dist/crypto/index.js'

const MIB = 1024 * 1024
const SIZE = Number(process.env.BENCH_UPLOAD_MIB ?? 256) * MIB

/** The baseline: a loopback server that writes a PUT's body to a file and fsyncs it, as a store at its simplest would. */
async function fileServer (target) {
  const server = createServer((req, res) => {
    pipeline(req, createWriteStream(target)).then(() => {
      const fd = openSync(target, 'r')
      try { fsyncSync(fd) } finally { closeSync(fd) }
      res.end('ok')
    }, err => { res.statusCode = 500; res.end(String(err)) })
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise(resolve => server.close(resolve)) }
}

const mbps = (bytes, ms) => `${(bytes / MIB / (ms / 1000)).toFixed(0)} MiB/s`

/** Upload of one file through the embedded service (in this process, as the daemon runs it) beside a plain PUT to a file. */
export async function benchUpload (root, report) {
  const file = join(root, 'upload.bin')
  writeStreamFile(file, SIZE, 3)
  const plain = await fileServer(join(root, 'plain-put.bin'))
  const service = await startLocalService({ dir: join(root, 'upload-service') })
  const credentials = {}
  const url = service.url
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => credentials.apiKey, sessionToken: () => undefined })
  try {
    credentials.apiKey = (await clients.deals.login(newWalletKey())).apiKey
    const profile = cidProfile('kubo-cidv1')
    // Best of two of each, alternated: the machine is shared and busy.
    let put = Infinity
    let up = Infinity
    for (let round = 0; round < 2; round++) {
      let t = performance.now()
      const answer = await request(`${plain.url}/`, { method: 'PUT', body: createReadStream(file, { highWaterMark: MIB }) })
      await answer.body.dump()
      put = Math.min(put, performance.now() - t)
      // A fresh file each round (a different key byte) so the service stores new blocks, never dedups.
      const fresh = join(root, `upload-${round}.bin`)
      writeStreamFile(fresh, SIZE, 10 + round)
      t = performance.now()
      await clients.objects.put(fresh, profile)
      up = Math.min(up, performance.now() - t)
    }
    report(`upload ${SIZE / MIB} MiB through the embedded service (CID on both ends, stored durably)`, mbps(SIZE, up), `loopback PUT to a file + fsync ${mbps(SIZE, put)}`, `${(put / up).toFixed(2)}x plain`, 'approach 1.0x plain')
  } finally {
    await clients.close()
    await service.stop()
    await plain.close()
  }
}
