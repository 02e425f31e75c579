export {
  AdmissionRefused,
  type AdmissionStats,
  FairAdmission,
  type FairAdmissionOptions,
  type Grant,
  type GroupLoad,
  type Load,
  type Ticket,
  type WaitOptions,
  type WaitOutcome,
} from './fair-admission.js';
