#!/usr/bin/env python3
"""Writes tests/fixtures/message_requests.json: requests over every calculator and the settings
that change what the core writes (optimizers, precisions, strategies, ZeRO, DDP, LoRA, runtimes,
allocator options, formats). tests/js/messages.test.js runs them (and the golden cases) and
checks that every sentence in the results is in the message catalog (cpp/data/messages.json)
and that both languages of the page translate it. Run: python3 tools/message_requests.py"""
import json
import os

ABOUT = "Requests whose results hold the core's sentences; written by tools/message_requests.py"
reqs = []
presets = ['gpt2','bert-large-uncased','llama-2-7b','llama-3-8b','t5-small','mixtral-8x7b','gemma-2-2b','qwen3-30b-a3b','deepseek-v3','phi-3-mini-4k']
opts = ['sgd','sgd-momentum','adam','adamw','adafactor','adafactor-hf','adagrad','rmsprop','lion','adam-8bit','adamw-8bit','paged-adamw-8bit']
precs = ['fp32','amp-fp16','amp-bf16','bf16','fp16']
strats = ['none','full','attention-recompute','every-k','sqrt','sequential','chen-greedy','revolve','optimal','optimal-single-level','block']
gpus = ['a100-80gb','v100-16gb','h100-80gb','rtx-4090']
base = {'microBatch':1,'seqLen':512,'timeline':False}
for p in presets:
  for o in opts[::2] + ['adamw']:
    reqs.append(['peakMemory', dict(base, model={'preset':p}, optimizer=o, precision='amp-bf16', gpu='a100-80gb')])
for pr in precs:
  for s in strats:
    reqs.append(['peakMemory', dict(base, model={'preset':'gpt2'}, precision=pr, checkpointing={'strategy':s, 'k':2} if s=='every-k' else {'strategy':s}, gpu='v100-16gb')])
variants = [
  dict(zeroStage=1, dataParallel=8), dict(zeroStage=2, dataParallel=8, offload={'optimizer':True}), dict(zeroStage=3, dataParallel=4, offload={'optimizer':True,'params':True}),
  dict(dataParallel=4), dict(dataParallel=4, ddp={'bucketCapMb':50,'gradientAsBucketView':True}), dict(tensorParallel=2, sequenceParallel=True),
  dict(lora={'rank':16}), dict(lora={'rank':8,'qlora':True}), dict(lora={'rank':8,'targetModules':'all-linear'}), dict(lora={'rank':8,'targetModules':['q_proj','nope']}),
  dict(compile=True), dict(loss='chunked'), dict(loss='liger-fused-linear'), dict(activationOffloading=True), dict(optimizerInBackward=True),
  dict(zeroGradSetToNone=False), dict(optimizerImplementation='fused'), dict(optimizerImplementation='for-loop'), dict(optimizerImplementation='transformers'),
  dict(allocator='expandable_segments:True'), dict(allocator='max_split_size_mb:128,garbage_collection_threshold:0.6'), dict(simulateAllocator=False),
  dict(runtime='pytorch-1.10-cuda'), dict(runtime='pytorch-1.13-cuda'), dict(runtime='pytorch-2.0-cuda'), dict(runtime='pytorch-cpu'), dict(runtimeOverheadBytes=1000000000),
  dict(gradientAccumulationSteps=4), dict(attention='eager'), dict(attention='sdpa'), dict(attention='flash'), dict(microBatch=64, seqLen=4096),
  dict(gpuMemoryBytes=8000000000), dict(searchMaxMicroBatch=True), dict(masterWeights=True), dict(precision='fp16'),
]
for p in ['llama-2-7b','gpt2','t5-small','mixtral-8x7b','bert-large-uncased']:
  for v in variants:
    r = dict(base, model={'preset':p}, optimizer='adamw', precision='amp-bf16', gpu='a100-80gb'); r.update(v)
    reqs.append(['peakMemory', r])
# the one-step model's settings: a runtime's default context (no GPU preset), ZeroRedundancyOptimizer,
# compile with op-level selective checkpointing
reqs.append(['peakMemory', dict(base, model={'preset':'gpt2'}, optimizer='adamw', runtime='pytorch-1.10-cuda')])
reqs.append(['peakMemory', dict(base, model={'preset':'gpt2'}, optimizer='adamw', dataParallel=4, zeroRedundancyOptimizer=True)])
reqs.append(['peakMemory', dict(base, model={'preset':'llama-2-7b'}, optimizer='adamw', precision='bf16', compile=True, checkpointing='torchtitan-op')])
# LoRA under torch.compile
reqs.append(['peakMemory', dict(base, model={'preset':'llama-2-7b'}, optimizer='adamw', precision='amp-bf16', compile=True, lora={'rank':16})])
for v in variants[:8]:
  r = dict(base, model={'params':7000000000}, optimizer='adamw', precision='amp-bf16'); r.update(v); reqs.append(['peakMemory', r])
reqs.append(['peakMemory', dict(base, model={'config':{'model_type':'granite','hidden_size':64,'num_hidden_layers':2,'num_attention_heads':4,'num_key_value_heads':2,'intermediate_size':128,'vocab_size':100}}, optimizer='adamw')])
reqs.append(['peakMemory', dict(base, mlp={'sizes':[1024,1024,10],'activation':'gelu','dropout':0.1}, optimizer='adam', checkpointing={'strategy':'full'})])
# accumulation
for p in ['gpt2','bert-large-uncased','llama-2-7b']:
  for g_ in gpus:
    for pr in ['amp-fp16','amp-bf16','fp32']:
      reqs.append(['accumulation', {'model':{'preset':p},'gpu':g_,'precision':pr,'targetGlobalBatch':32,'seqLen':512,'optimizer':'adamw'}])
reqs.append(['accumulation', {'microBatch':4,'accumulationSteps':8,'dataParallel':2,'seqLen':128}])
reqs.append(['accumulation', {'microBatch':4,'accumulationSteps':8,'lossReduction':'mean','variableLength':True}])
for s in ['none','full','attention-recompute']:
  reqs.append(['accumulation', {'model':{'preset':'gpt2'},'gpu':'a100-80gb','targetGlobalBatch':64,'seqLen':1024,'checkpointing':s}])
# checkpointSize
for o in opts + ['torch-adafactor']:
  for wd in ['fp32','fp16','bf16','int8']:
    for fmt in ['raw','torch','safetensors', None]:
      r = {'model':{'preset':'gpt2'},'optimizer':o,'weightDtype':wd}
      if fmt: r['format']=fmt
      reqs.append(['checkpointSize', r])
  reqs.append(['checkpointSize', {'model':{'params':1000000},'optimizer':o,'weightDtype':'fp32'}])
  reqs.append(['checkpointSize', {'model':{'tensors':[{'name':'w','shape':[64,32]}]},'optimizer':o,'weightDtype':'fp32','format':'torch'}])
# placement
chain = {'inputBytes':1000,'layers':[{'forwardCost':1,'backwardCost':2,'outputBytes':1000,'savedBytes':3000} for _ in range(12)]}
for s in strats + ['pytorch-sequential','periodic','greedy']:
  reqs.append(['placement', {'chain':chain,'strategy':s}])
  reqs.append(['placement', {'chain':chain,'strategy':s,'budgetBytes':8000}])
reqs.append(['placement', {'model':{'preset':'gpt2'},'microBatch':1,'seqLen':1024,'strategy':'optimal','budgetBytes':2000000000}])
reqs.append(['presets', {}])
for p in presets: reqs.append(['describeModel', {'model':{'preset':p}}])
extra = [
 ['peakMemory', dict(base, model={'preset':'llama-2-7b'}, optimizer='paged-adamw-8bit', precision='amp-bf16', gpu='a100-80gb')],
 ['peakMemory', dict(base, model={'params':1000000000}, optimizer='adafactor', precision='amp-bf16')],
 ['accumulation', {'model':{'preset':'gpt2'},'gpu':'a100-80gb','targetGlobalBatch':33,'dataParallel':2,'seqLen':512}],
 ['accumulation', {'model':{'params':1000000000},'gpu':'a100-80gb','targetGlobalBatch':32,'seqLen':512}],
 ['checkpointSize', {'model':{'preset':'gpt2'},'masterWeights':True,'includeOptimizer':False,'weightDtype':'fp16'}],
 ['checkpointSize', {'model':{'preset':'gpt2'},'format':'safetensors','maxShardBytes':100000000,'weightDtype':'fp32'}],
]
for seq in [128, 512, 2048, 8192]:
  for g_ in ['a100-80gb','h100-80gb','rtx-4090','t4','a10']:
    for p in ['gpt2-xl','llama-2-7b','bert-large-uncased']:
      extra.append(['accumulation', {'model':{'preset':p},'gpu':g_,'targetGlobalBatch':64,'seqLen':min(seq, 512 if 'bert' in p else 1024 if 'gpt2' in p else seq),'precision':'amp-fp16','checkpointing':'full'}])
extra.append(['accumulation', {'model':{'preset':'tinyllama-1.1b'},'gpu':'rtx-4090','targetGlobalBatch':512,'seqLen':2048,'precision':'amp-fp16','checkpointing':'full'}])
extra.append(['accumulation', {'model':{'preset':'gpt2'},'gpu':'a100-80gb','targetGlobalBatch':1024,'seqLen':1024,'precision':'amp-fp16','checkpointing':'full','overheadPerLayerSeconds':0.01}])
extra.append(['accumulation', {'model':{'preset':'tinyllama-1.1b'},'gpu':'a100-80gb','targetGlobalBatch':512,'seqLen':512,'precision':'amp-fp16','checkpointing':'full'}])

# The training recipes: FSDP, ZeRO-3 as DeepSpeed runs it, op-level selective checkpointing,
# float8, packed and padded batches, torchao optimizers, encoder-decoder lengths, compile.
recipe = dict(base, model={'preset':'llama-3-8b'}, optimizer='adamw', precision='amp-bf16', gpu='h100-80gb')
def v(**kw):
  r = dict(recipe); r.update(kw); return r
for st in ['FULL_SHARD','SHARD_GRAD_OP','NO_SHARD']:
  extra.append(['peakMemory', v(dataParallel=8, fsdp={'shardingStrategy':st})])
extra.append(['peakMemory', v(dataParallel=8, fsdp={'version':1,'shardingStrategy':'HYBRID_SHARD','shardGroupSize':4,'mixedPrecision':{'paramDtype':'bf16','reduceDtype':'fp32'}})])
extra.append(['peakMemory', v(dataParallel=8, fsdp={'cpuOffload':True})])
extra.append(['peakMemory', v(dataParallel=8, zeroStage=3)])
extra.append(['peakMemory', v(dataParallel=8, zeroStage=3, zero3={'prefetchBucketSize':50000000})])
extra.append(['peakMemory', v(dataParallel=8, zeroStage=2, zeroMixedPrecision='torch-autocast')])
extra.append(['peakMemory', v(dataParallel=8, zeroStage=2)])
extra.append(['peakMemory', v(dataParallel=8, zeroStage=2, zero={'overlapComm':True,'reduceBucketSize':200000000})])
extra.append(['peakMemory', v(dataParallel=8, zeroStage=1, zero={'contiguousGradients':False})])
extra.append(['peakMemory', v(dataParallel=8, fsdp={'reshardAfterForward':{'root':True,'lastBlock':False}})])
extra.append(['peakMemory', v(dataParallel=8, fsdp={'shardingStrategy':'SHARD_GRAD_OP','reshardAfterForward':{'blocks':False,'lastBlock':True}})])
extra.append(['peakMemory', v(dataParallel=8, fsdp={'version':1,'limitAllGathers':False})])
for ck in [{'strategy':'torchtitan-op'}, {'strategy':'selective-op','saveOps':['mm','sdpa'],'everyOtherMm':True}, {'strategy':'selective-op','saveOps':['bmm']}, {'strategy':'selective-layer','k':2}, {'strategy':'attention-recompute'}]:
  extra.append(['peakMemory', v(checkpointing=ck)])
  extra.append(['peakMemory', v(checkpointing=ck, attention='eager')])
extra.append(['peakMemory', v(float8={'recipe':'tensorwise'})])
extra.append(['peakMemory', v(float8={'recipe':'tensorwise'}, gpu=None, gpuMemoryBytes=80000000000)])
extra.append(['peakMemory', v(samples={'packed':True})])
extra.append(['peakMemory', v(samples={'lengths':[100,200,300,400,600]})])
for o in ['torchao-adamw-8bit','torchao-adamw-4bit','torchao-adamw-fp8']:
  extra.append(['peakMemory', v(optimizer=o)])
  extra.append(['checkpointSize', {'model':{'preset':'gpt2'},'optimizer':o,'weightDtype':'bf16','format':'torch'}])
  extra.append(['checkpointSize', {'model':{'preset':'gpt2'},'optimizer':o,'weightDtype':'bf16'}])
extra.append(['peakMemory', dict(base, model={'preset':'t5-small'}, optimizer='adamw', precision='amp-bf16', targetLen=128)])
for p in ['gpt2','bert-large-uncased','t5-small']:
  extra.append(['peakMemory', dict(base, model={'preset':p}, optimizer='adamw', precision='amp-bf16', compile=True)])
# diffusion networks, their pipelines, the decoder families with their own recipes, GPTQ / AWQ
dbase = {'microBatch': 1, 'timeline': False}
for p in ['sd-1.5-unet', 'sdxl-base-unet', 'sd3-medium-transformer', 'flux-1-dev-transformer', 'dit-xl-2-256',
          'pixart-alpha-xl-2-1024']:
  extra.append(['peakMemory', dict(dbase, model={'preset': p}, precision='amp-bf16', gpu='a100-80gb')])
  extra.append(['peakMemory', dict(dbase, model={'preset': p}, precision='bf16', lora={'rank': 4}, checkpointing='full', compile=True)])
  extra.append(['peakMemory', dict(dbase, model={'preset': p}, attention='eager', runtime='pytorch-cpu')])
for p in ['falcon-7b', 'phi-2', 'gpt-j-6b', 'starcoder2-3b', 'olmo-1b', 'olmo-2-7b', 'gemma-2b']:
  extra.append(['peakMemory', dict(dbase, model={'preset': p}, seqLen=256, precision='bf16', compile=True)])
extra.append(['peakMemory', dict(dbase, model={'preset': 'gemma-2b'}, seqLen=256, tensorParallel=2)])
extra.append(['peakMemory', dict(dbase, model={'preset': 'torch-nn-transformer'}, seqLen=64, targetLen=32)])
sdxl = {'denoiser': {'preset': 'sdxl-base-unet'}}
for more in [{}, {'priorPreservation': True}, {'precomputed': {'latents': True}, 'vae': False}]:
  extra.append(['peakMemory', dict(dbase, model={'pipeline': dict(sdxl, **more)}, imageSize=1024, precision='amp-bf16',
                                   lora={'rank': 4}, checkpointing='full', gpu='rtx-4090')])
extra.append(['peakMemory', dict(dbase, model={'pipeline': {'denoiser': {'preset': 'dit-xl-2-256'}}}, imageSize=2048,
                                 microBatch=4, lora={'rank': 4}, checkpointing='full')])
with open(os.path.join(os.path.dirname(__file__), '..', 'cpp', 'data', 'models', 'llama-2-7b.json')) as f:
  llama = json.load(f)['config']
for q in [{'quant_method': 'gptq', 'bits': 4, 'group_size': 128}, {'quant_method': 'awq', 'bits': 4, 'group_size': 128}]:
  extra.append(['peakMemory', dict(dbase, model={'config': dict(llama, quantization_config=q)}, seqLen=512,
                                   precision='amp-fp16', lora={'rank': 8}, gpu='rtx-4090')])
# Traced models (model.trace): the small traces of tests/fuzz/trace_seeds (python/trainmem_trace),
# with and without a length, a bfloat16 step, dropout, convolutions, an unused parameter.
seeds = os.path.join(os.path.dirname(__file__), '..', 'tests', 'fuzz', 'trace_seeds')
def trace(name):
  with open(os.path.join(seeds, name + '.trace.json')) as f:
    return json.load(f)
lm, unet, shared, mlp_t = trace('lm'), trace('unet'), trace('shared'), trace('mlp')
lm_f32 = {k: x for k, x in lm.items() if k != 'variants'}
inexact = dict(mlp_t, inexact=[{'value': 'tensors[0].bytes'}])
def traced(t_, pr, rt, seq=None):
  r = {'model':{'trace':t_},'microBatch':3,'optimizer':'adamw','precision':pr,'runtime':rt,'timeline':False}
  if seq: r['seqLen'] = seq
  extra.append(['peakMemory', r])
for pr in ['fp32', 'bf16', 'fp16']:
  traced(lm, pr, 'pytorch-2.5-cuda', 8)
traced(lm_f32, 'bf16', 'pytorch-cpu', 8)
traced(unet, 'fp32', 'pytorch-cpu')
traced(shared, 'fp32', 'pytorch-cpu')
traced(inexact, 'fp32', 'pytorch-cpu')
extra.append(['describeModel', {'model':{'trace':unet}}])
extra.append(['checkpointSize', {'model':{'trace':mlp_t},'optimizer':'adamw','weightDtype':'bf16'}])
extra.append(['accumulation', {'model':{'trace':lm},'gpu':'a100-80gb','targetGlobalBatch':32,'seqLen':16}])
extra.append(['accumulation', {'model':{'trace':unet},'gpu':'a100-80gb','targetGlobalBatch':32,'precision':'fp32'}])
extra.append(['placement', {'model':{'trace':mlp_t},'microBatch':4,'strategy':'optimal','budgetBytes':2000000}])
extra.append(['peakMemory', {'model':{'trace':shared},'microBatch':8,'optimizer':'adamw','gpu':'a100-80gb','lora':{'rank':4,'targetModules':['fc1','fc2']},'dataParallel':4,'zeroStage':2}])
# Traces as the tracer writes them now (tools/measure_traced.py): notes as codes of the catalog
# (a U-Net's CPU fallbacks and its missing bfloat16 step; the tensors a language model keeps).
# (The seeds above are older files, whose notes are plain text: the file's own words.)
fixtures = os.path.join(os.path.dirname(__file__), '..', 'tests', 'fixtures', 'traces')
def fixture_trace(name):
  with open(os.path.join(fixtures, name + '.trace.json')) as f:
    return json.load(f)
unetish, llama_tiny = fixture_trace('unetish'), fixture_trace('llama_tiny')
traced(unetish, 'fp32', 'pytorch-cpu')
extra.append(['describeModel', {'model':{'trace':unetish}}])
extra.append(['describeModel', {'model':{'trace':llama_tiny}}])
extra = [[f, {k: x for k, x in r.items() if x is not None}] for f, r in extra]
reqs += extra
# vision and speech networks (configs as tests/cpp/test_vision_hf.cpp writes them), bare counts
labels = {str(i): 'class %d' % i for i in range(1000)}
vit = {'model_type':'vit','architectures':['ViTForImageClassification'],'hidden_size':768,'num_hidden_layers':12,
       'num_attention_heads':12,'intermediate_size':3072,'hidden_act':'gelu','image_size':224,'patch_size':16,
       'num_channels':3,'qkv_bias':True,'id2label':labels}
clip = {'model_type':'clip','architectures':['CLIPModel'],'projection_dim':512,
        'text_config':{'hidden_size':512,'intermediate_size':2048,'num_attention_heads':8,'num_hidden_layers':12,
                       'vocab_size':49408,'max_position_embeddings':77,'hidden_act':'quick_gelu'},
        'vision_config':{'hidden_size':768,'intermediate_size':3072,'num_attention_heads':12,'num_hidden_layers':12,
                         'image_size':224,'patch_size':32,'hidden_act':'quick_gelu'}}
whisper = {'model_type':'whisper','architectures':['WhisperForConditionalGeneration'],'d_model':384,'encoder_layers':4,
           'decoder_layers':4,'encoder_attention_heads':6,'decoder_attention_heads':6,'encoder_ffn_dim':1536,
           'decoder_ffn_dim':1536,'vocab_size':51865,'num_mel_bins':80,'max_source_positions':1500,
           'max_target_positions':448,'activation_function':'gelu','dropout':0.0,'attention_dropout':0.0,
           'activation_dropout':0.0,'scale_embedding':False,'tie_word_embeddings':True}
vb = {'microBatch':2,'optimizer':'adamw','precision':'amp-bf16','gpu':'a100-40gb','timeline':False}
reqs.append(['peakMemory', dict(vb, model={'config':vit})])
reqs.append(['peakMemory', dict(vb, model={'config':vit}, imageSize=384)])
reqs.append(['peakMemory', dict(vb, model={'config':vit}, numClasses=10)])
reqs.append(['peakMemory', dict(vb, model={'config':dict(vit, architectures=['ViTModel'])})])
reqs.append(['peakMemory', dict(vb, model={'config':vit}, compile=True)])
reqs.append(['peakMemory', dict(vb, model={'config':vit}, lora={'rank':8,'targetModules':['query','value']})])
reqs.append(['peakMemory', dict(vb, model={'config':clip})])
reqs.append(['peakMemory', dict(vb, model={'config':dict(clip['vision_config'], model_type='clip_vision_model', architectures=['CLIPVisionModel'])})])
reqs.append(['peakMemory', dict(vb, model={'config':whisper}, targetLen=100)])
reqs.append(['peakMemory', dict(vb, model={'config':dict(whisper, architectures=['WhisperModel'])}, targetLen=100)])
reqs.append(['peakMemory', dict(vb, model={'preset':'torchvision/resnet50'})])
# wav2vec2 (configuration_wav2vec2.py defaults: wav2vec2-base) with its CTC head, without a
# transcript length and with one, and bare; SegFormer (MiT-b0 defaults) with its decode head and
# bare; a bare ConvNextModel; Whisper without targetLen (the decoder's full length)
w2v = {'model_type':'wav2vec2','architectures':['Wav2Vec2ForCTC'],'vocab_size':32}
seg = {'model_type':'segformer','architectures':['SegformerForSemanticSegmentation'],'num_labels':150}
sb = dict(vb, timeline=False)
reqs.append(['peakMemory', dict(sb, model={'config':w2v}, seqLen=32000)])
reqs.append(['peakMemory', dict(sb, model={'config':w2v}, seqLen=32000, targetLen=20)])
reqs.append(['peakMemory', dict(sb, model={'config':dict(w2v, architectures=['Wav2Vec2Model'])})])
reqs.append(['peakMemory', dict(sb, model={'config':seg})])
reqs.append(['peakMemory', dict(sb, model={'config':dict(seg, architectures=['SegformerModel'])})])
reqs.append(['peakMemory', dict(sb, model={'config':{'model_type':'convnext','architectures':['ConvNextModel']}})])
reqs.append(['peakMemory', dict(sb, model={'config':whisper})])
reqs.append(['peakMemory', dict(vb, model={'params':7000000000,'layers':32,'hidden':4096,'heads':32}, seqLen=512)])
# pipeline parallelism: each schedule, with a GPU (the binding stage's verdict and search)
for sch in ['1f1b', 'gpipe', 'interleaved-1f1b', 'zb-h1', 'zb-v']:
  reqs.append(['peakMemory', dict(base, model={'preset':'gpt2'}, optimizer='adamw', precision='amp-bf16', gpu='a100-80gb', pipelineParallel=2, schedule=sch, gradientAccumulationSteps=4)])
# advise on a pipeline: the verdict on the binding stage, the step's time not split over stages
reqs.append(['advise', dict(base, model={'preset':'gpt2'}, optimizer='adamw', precision='amp-bf16', gpu='a100-80gb', pipelineParallel=2, gradientAccumulationSteps=4)])
# context and expert parallelism: ring attention (both rotations), experts dropless and capped
llama = dict(base, model={'preset':'llama-3-8b'}, optimizer='adamw', precision='amp-bf16', gpu='h100-80gb', seqLen=8192)
reqs.append(['peakMemory', dict(llama, contextParallel=4, dataParallel=2, zeroStage=1)])
reqs.append(['peakMemory', dict(llama, contextParallel=2, contextParallelism={'rotate':'alltoall','loadBalance':'none'})])
mix = dict(base, model={'preset':'mixtral-8x7b'}, optimizer='adamw', precision='amp-bf16', gpu='h100-80gb', dataParallel=8)
reqs.append(['peakMemory', dict(mix, expertParallel=8, expertParallelism={'routingImbalance':1.5})])
reqs.append(['peakMemory', dict(mix, expertParallel=4, expertTensorParallel=2, expertParallelism={'capacityFactor':1.25}, contextParallel=2, seqLen=1024)])
out = os.path.join(os.path.dirname(__file__), '..', 'tests', 'fixtures', 'message_requests.json')
with open(out, 'w') as f:
    json.dump({'about': ABOUT, 'requests': reqs}, f, separators=(',', ':'))
    f.write('\n')
print(len(reqs))
