import { serviceUnderTest, EXTERNAL } from '../helpers/service.js'
import { objectStoreConformance } from '../store/conformance.js'
import { pointerRegistryConformance } from '../store/pointer-conformance.js'

if (!EXTERNAL) {
  pointerRegistryConformance('the service over HTTP', async () => ({ pointers: (await serviceUnderTest()).clients.pointers }))
  objectStoreConformance('the service over HTTP', async () => {
    const { clients, local } = await serviceUnderTest()
    return {
      store: clients.objects,
      // A service that keeps a deleted upload's bytes until it reclaims space.
      deleteKeepsBytes: true,
      // Its gateway answers other bytes than the CID's.
      damage: async () => { local?.faults.set('gateway', { bitflip: true }) }
    }
  })
}
